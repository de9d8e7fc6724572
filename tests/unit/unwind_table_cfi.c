/*
 * Functions whose CFI the unwind-table test knows exactly: each kind of
 * rule the converter handles, written with assembler CFI directives so
 * the compiler's choices cannot change them. Labels mark the addresses the
 * test looks up. Built twice: as is (.eh_frame), and with UT_DEBUG_FRAME
 * and -fno-asynchronous-unwind-tables, so the same directives land in
 * .debug_frame under other names.
 */
#ifdef UT_DEBUG_FRAME
#define P(x) "ut_dbg_" #x
#else
#define P(x) "ut_eh_" #x
#endif

__asm__(".pushsection .text\n"
	/* rsp-based: push rbx, then a 40-byte frame */
	".globl " P(rsp) "\n.type " P(rsp) ", @function\n"
	P(rsp) ":\n.cfi_startproc\n"
	"	push %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx, -16\n"
	".globl " P(rsp_1) "\n" P(rsp_1) ":\n"
	"	sub $40, %rsp\n.cfi_def_cfa_offset 56\n"
	".globl " P(rsp_2) "\n" P(rsp_2) ":\n"
	"	add $40, %rsp\n.cfi_def_cfa_offset 16\n"
	"	pop %rbx\n.cfi_def_cfa_offset 8\n"
	".globl " P(rsp_3) "\n" P(rsp_3) ":\n"
	"	ret\n.cfi_endproc\n"
	".size " P(rsp) ", .-" P(rsp) "\n"
	/* rbp-based: push rbp; mov rsp, rbp; a branch that remembers and
	 * restores the state around an early leave */
	".globl " P(rbp) "\n.type " P(rbp) ", @function\n"
	P(rbp) ":\n.cfi_startproc\n"
	"	push %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"
	".globl " P(rbp_1) "\n" P(rbp_1) ":\n"
	"	mov %rsp, %rbp\n.cfi_def_cfa_register %rbp\n"
	".globl " P(rbp_2) "\n" P(rbp_2) ":\n"
	"	test %rdi, %rdi\n	je 1f\n"
	".cfi_remember_state\n"
	"	leave\n.cfi_def_cfa %rsp, 8\n.cfi_restore %rbp\n"
	".globl " P(rbp_3) "\n" P(rbp_3) ":\n"
	"	ret\n"
	"1:\n.cfi_restore_state\n"
	".globl " P(rbp_4) "\n" P(rbp_4) ":\n"
	"	sub $8, %rsp\n	leave\n	ret\n.cfi_endproc\n"
	".size " P(rbp) ", .-" P(rbp) "\n"
	/* the lazy-binding PLT's CFA expression, as ld writes it for .plt */
	".globl " P(plt) "\n.type " P(plt) ", @function\n"
	P(plt) ":\n.cfi_startproc\n"
	".cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22\n"
	"	nop\n	nop\n	ret\n.cfi_endproc\n"
	".size " P(plt) ", .-" P(plt) "\n"
	/* another CFA expression: rsp + 8, dereferenced */
	".globl " P(expr) "\n.type " P(expr) ", @function\n"
	P(expr) ":\n.cfi_startproc\n"
	".cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06\n"
	"	nop\n	ret\n.cfi_endproc\n"
	".size " P(expr) ", .-" P(expr) "\n"
	/* CFA in another register (stack realignment through r10) */
	".globl " P(r10) "\n.type " P(r10) ", @function\n"
	P(r10) ":\n.cfi_startproc\n"
	"	lea 8(%rsp), %r10\n.cfi_def_cfa %r10, 0\n"
	".globl " P(r10_1) "\n" P(r10_1) ":\n"
	"	ret\n.cfi_endproc\n"
	".size " P(r10) ", .-" P(r10) "\n"
	/* a signal trampoline, and an outermost frame */
	".globl " P(sig) "\n.type " P(sig) ", @function\n"
	P(sig) ":\n.cfi_startproc\n.cfi_signal_frame\n"
	"	nop\n	ret\n.cfi_endproc\n"
	".size " P(sig) ", .-" P(sig) "\n"
	".globl " P(outer) "\n.type " P(outer) ", @function\n"
	P(outer) ":\n.cfi_startproc\n.cfi_undefined %rip\n"
	"	nop\n	ret\n.cfi_endproc\n"
	".size " P(outer) ", .-" P(outer) "\n"
	".popsection\n");
