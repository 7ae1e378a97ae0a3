// Package callsite names the code that made a syscall: the first return
// address on a stopped thread's stack that belongs to the program rather
// than to the C library, the loader or a language runtime, as
// module+0xoffset, which stays the same across runs with ASLR off.
//
// It reads a tracee's stack and /proc/PID/maps; it never stops, resumes or
// changes a thread.
package callsite
