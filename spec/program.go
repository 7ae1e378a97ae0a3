package spec

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Kernel limits on execve's arguments (linux/binfmts.h).
const (
	maxArgStrLen = 32 * 4096 // MAX_ARG_STRLEN, with the NUL
	minArgMax    = 128 << 10 // what the kernel allows whatever the stack limit
	maxArgMax    = 6 << 20   // 3/4 of _STK_LIM: the cap whatever the stack limit
	// argHeadroom is kept for what the placeholders do not show: the real
	// output directory in each {{tmp}} and lockstep's own variables.
	argHeadroom = 16 << 10
)

// checkArgs refuses a command line execve would refuse with E2BIG.
func checkArgs(argv, env []string) error {
	total := 0
	for i, a := range argv {
		if len(a)+1 > maxArgStrLen {
			return fmt.Errorf("argument %d is %d bytes, over the kernel's limit of %d for one argument", i, len(a), maxArgStrLen-1)
		}
		total += len(a) + 1 + 8 // the string and its pointer
	}
	for _, e := range env {
		if len(e)+1 > maxArgStrLen {
			k, _, _ := strings.Cut(e, "=")
			return fmt.Errorf("variable %s is %d bytes, over the kernel's limit of %d for one variable", k, len(e), maxArgStrLen-1)
		}
		total += len(e) + 1 + 8
	}
	if limit := argMax() - argHeadroom; total > limit {
		return fmt.Errorf("arguments and environment take %d bytes, over the %d the kernel accepts for a new program", total, limit)
	}
	return nil
}

// argMax is execve's limit on arguments plus environment: a quarter of
// the stack limit, within the kernel's floor and cap.
func argMax() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur/4 > maxArgMax {
		return maxArgMax
	}
	return max(int(rl.Cur/4), minArgMax)
}

func checkProgram(p, dir string) error {
	if !strings.Contains(p, "/") {
		lp, err := exec.LookPath(p)
		if err != nil {
			return fmt.Errorf("program %q not found in PATH", p)
		}
		return checkExecutable(lp, 0)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("program %s does not exist (built? try `make testdata`)", p)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("program %s is not executable", p)
	}
	return checkExecutable(p, 0)
}

// elfMachine is the ELF machine of programs this lockstep can trace.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]

// maxInterpDepth is how many #! interpreters may chain (the kernel allows
// a few more; a longer chain is a mistake).
const maxInterpDepth = 4

// checkExecutable looks inside an executable file for what would make
// execve fail in every trial: an empty file, a script without #!, a
// missing interpreter, a binary for another machine.
func checkExecutable(p string, depth int) error {
	f, err := os.Open(p)
	if err != nil {
		// Unreadable but executable: only the kernel can tell.
		return nil
	}
	defer f.Close()
	// The kernel reads the first 256 bytes (BINPRM_BUF_SIZE) to decide.
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case n == 0:
		return fmt.Errorf("program %s is an empty file", p)
	case bytes.HasPrefix(head, []byte("#!")):
		line, _, _ := bytes.Cut(head[2:], []byte("\n"))
		fs := strings.Fields(string(line))
		if len(fs) == 0 {
			return fmt.Errorf("program %s: its #! line names no interpreter", p)
		}
		interp := fs[0]
		if !filepath.IsAbs(interp) {
			return fmt.Errorf("program %s: interpreter %s in its #! line must be an absolute path", p, interp)
		}
		st, err := os.Stat(interp)
		if err != nil {
			return fmt.Errorf("program %s: interpreter %s in its #! line does not exist", p, interp)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("program %s: interpreter %s in its #! line is not executable", p, interp)
		}
		if depth+1 >= maxInterpDepth {
			return fmt.Errorf("program %s: more than %d #! interpreters in a chain", p, maxInterpDepth)
		}
		return checkExecutable(interp, depth+1)
	case bytes.HasPrefix(head, []byte(elf.ELFMAG)):
		ef, err := elf.NewFile(f)
		if err != nil {
			return fmt.Errorf("program %s is not a valid ELF file: %v", p, err)
		}
		defer ef.Close()
		if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
			return fmt.Errorf("program %s is an ELF %s, not an executable", p, strings.TrimPrefix(ef.Type.String(), "ET_"))
		}
		if elfMachine != elf.EM_NONE && (ef.Machine != elfMachine || ef.Class != elf.ELFCLASS64) {
			return fmt.Errorf("program %s is a %s-bit %s binary; this machine runs %s", p,
				strings.TrimPrefix(ef.Class.String(), "ELFCLASS"), strings.TrimPrefix(ef.Machine.String(), "EM_"), runtime.GOARCH)
		}
		return nil
	}
	return fmt.Errorf("program %s is neither an ELF binary nor a script starting with #! (the kernel cannot run it)", p)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
