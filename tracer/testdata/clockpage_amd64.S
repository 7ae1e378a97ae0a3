# The code of lockstep's clock page (tracer/vtime_vdso_amd64.go holds the
# assembled bytes; TestClockPageCode re-assembles this file and compares).
# The page is mapped read+exec into every traced process of a node and
# written by the tracer while all of them are stopped:
#   0x000 values[16]  ns of clock ids 0-15 (the node's clock offset included)
#   0x080 served[16]  1 where lockstep answers the id, 0 = ask the kernel
#   0x100 clock_gettime, 0x180 gettimeofday, 0x1c0 time
# The vDSO's entry points jump here. Each routine is a leaf that touches
# only rax, rcx and rdx (caller-saved), uses no stack and makes the real
# syscall (which lockstep's seccomp filter then stops) for clocks it does
# not serve.
	.intel_syntax noprefix
	.text
page:
	.org 0x100
clock_gettime:			# int (clockid_t edi, struct timespec *rsi)
	cmp	edi, 15
	ja	1f
	test	rsi, rsi
	jz	1f
	mov	eax, edi
	lea	rcx, [rip + page]
	cmp	byte ptr [rcx + rax + 0x80], 0
	je	1f
	mov	rax, [rcx + rax*8]
	xor	edx, edx
	mov	ecx, 1000000000
	div	rcx
	mov	[rsi], rax
	mov	[rsi + 8], rdx
	xor	eax, eax
	ret
1:	mov	eax, 228		# SYS_clock_gettime
	syscall
	ret

	.org 0x180
gettimeofday:			# int (struct timeval *rdi, struct timezone *rsi)
	test	rdi, rdi
	jz	2f
	mov	rax, [rip + page]	# values[CLOCK_REALTIME]
	xor	edx, edx
	mov	ecx, 1000000000
	div	rcx
	mov	[rdi], rax
	mov	eax, edx
	xor	edx, edx
	mov	ecx, 1000
	div	ecx
	mov	[rdi + 8], rax
2:	xor	eax, eax
	ret

	.org 0x1c0
time:				# time_t (time_t *rdi)
	mov	rax, [rip + page]	# values[CLOCK_REALTIME]
	xor	edx, edx
	mov	ecx, 1000000000
	div	rcx
	test	rdi, rdi
	jz	3f
	mov	[rdi], rax
3:	ret
	.org 0x200
