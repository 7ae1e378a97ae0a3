package netns

import (
	"bufio"
	"fmt"
	"github.com/lockstep-dev/lockstep/internal/nsexec"
	"io"
	"os"
	"strconv"
	"strings"
)

// Listening reports whether some socket in the network namespace at nsPath
// listens on TCP port (IPv4 or IPv6). It is how a node's readiness condition
// (`ready: {listen: PORT}`) is checked, by lockstep at a quiescent point and
// by native runs alike.
func Listening(nsPath string, port uint16) (bool, error) {
	// On a thread of its own, which comes back before it is unlocked:
	// ending it instead (exiting locked) would fire the parent-death signal
	// of any child another goroutine forked from it (a native run's nodes).
	var ok bool
	err := nsexec.Do(nsPath, func() error {
		var err error
		ok, err = listeningHere(port)
		return err
	})
	return ok, err
}

// listeningHere is Listening for the thread's own namespace.
func listeningHere(port uint16) (bool, error) {
	for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
		r, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue // no IPv6
			}
			return false, err
		}
		ok, err := listensOn(r, port)
		r.Close()
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// tcpListen is the LISTEN state in /proc/net/tcp.
const tcpListen = "0A"

// listensOn parses /proc/net/tcp{,6}: "sl local_address rem_address st ...",
// addresses as HEX_IP:HEX_PORT.
func listensOn(r io.Reader, port uint16) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != tcpListen {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil {
			return false, fmt.Errorf("parsing %q: %w", f[1], err)
		}
		if uint16(p) == port {
			return true, nil
		}
	}
	return false, sc.Err()
}
