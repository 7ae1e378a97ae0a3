package engine

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// TestNeedPrivileges: a thread without some of the capabilities trials
// need is refused with their names; root's is not. Capabilities are a
// thread's: one thread drops two of them, and goes with them.
func TestNeedPrivileges(t *testing.T) {
	testutil.RequireRoot(t)
	if err := needPrivileges(); err != nil {
		t.Fatalf("as root: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		for _, c := range []int{unix.CAP_NET_ADMIN, unix.CAP_SYS_PTRACE} {
			data[c/32].Effective &^= 1 << (c % 32)
		}
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		done <- needPrivileges()
	}()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "needs root: this process lacks CAP_NET_ADMIN, CAP_SYS_PTRACE (") {
		t.Fatalf("without two capabilities: %v", err)
	}
}
