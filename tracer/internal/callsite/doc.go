// Package callsite names the code that made a syscall: the first return
// address on a stopped thread's stack that belongs to the program rather
// than to the C library, the loader or a language runtime, as
// module+0xoffset, which stays the same across runs with ASLR off. A Go
// program's stack is walked along its frame pointers and its functions
// told apart by package (the standard library's are skipped, a dependency's
// taken only when no function of the program's own module is on the
// stack, the runtime's own calls named by the return address at the
// stack's top and the chain when neither is); other stacks are scanned
// for return addresses. When the site so
// found is a Rust library crate's code compiled into the program (std's
// Lines::next, a tokio poll), the first frame of the program's own crate
// further up is kept too, as a label only (SiteAndCaller): the site, which
// makes the op's identity, stays what it was. A HotSpot JVM's site is the
// JDK's native code; its caller is the program's Java method, read from
// the JVM's own data along the frame pointers (jvm.go, through the layout
// HotSpot exports: jvm_vmstructs.go), a compiled frame's methods and
// lines from its nmethod's debug information (jvm_scopes.go).
//
// Each stop costs one read of the tracee's memory, whatever the walk: the
// stack is read from sp up in one piece (stack.go), further up only when
// a frame-pointer chain goes past it, since a read costs a system call of
// a few µs whatever its size; and each process remembers, by address,
// what the return addresses met on its stacks are, until its mappings
// are read again. The site is what reading each word on its own gave.
//
// It reads a tracee's stack and /proc/PID/maps; it never stops, resumes or
// changes a thread.
package callsite
