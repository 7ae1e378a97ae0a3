package tracer

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func readSmall(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var buf [256]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\n' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// readFileSmall reads a /proc file of a few KiB (readSmall stops at 256
// bytes, before the signal masks of a status file).
func readFileSmall(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func readlink(path string) (string, error) {
	var buf [256]byte
	n, err := unix.Readlink(path, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// statusField reads one field of /proc/PID/status, without its name.
func statusField(pid int, name string) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", err
	}
	i := bytes.Index(b, []byte("\n"+name+":"))
	if i < 0 {
		return "", fmt.Errorf("no %s in /proc/%d/status", name, pid)
	}
	rest := bytes.TrimLeft(b[i+len(name)+2:], " \t")
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return string(rest), nil
}
