package sockdiag

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// unix_diag request and reply constants (linux/unix_diag.h).
const (
	udiagShowVFS = 0x2 // UDIAG_SHOW_VFS
	unixDiagVFS  = 1   // UNIX_DIAG_VFS
)

// UnixBoundAt reports whether a Unix socket of the namespace is bound to
// the file with this device and inode number (as stat(2) gives them): a
// socket file names a socket of the namespace it was bound in, and Unix
// sockets of other namespaces are not listed.
func (d *Sock) UnixBoundAt(dev, ino uint64) (bool, error) {
	const (
		hdrLen = 16
		reqLen = 24 // struct unix_diag_req
		msgLen = 16 // struct unix_diag_msg
	)
	req := make([]byte, hdrLen+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1)
	r := req[hdrLen:]
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], 0xffffffff) // every state
	ne.PutUint32(r[12:], udiagShowVFS)
	found := false
	err := d.request(req, func(msg []byte) {
		for attrs := msg[min(msgLen, len(msg)):]; len(attrs) >= 4; {
			l, typ := int(ne.Uint16(attrs)), ne.Uint16(attrs[2:])
			if l < 4 || l > len(attrs) {
				return
			}
			if typ == unixDiagVFS && l >= 12 {
				// struct unix_diag_vfs: the inode, then the kernel's
				// dev_t (major << 20 | minor).
				kdev := ne.Uint32(attrs[8:])
				if uint64(ne.Uint32(attrs[4:])) == ino && unix.Mkdev(kdev>>20, kdev&0xfffff) == dev {
					found = true
				}
			}
			attrs = attrs[min((l+3)&^3, len(attrs)):]
		}
	})
	return found, err
}
