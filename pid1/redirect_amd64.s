//go:build !podsup_portable

#include "textflag.h"

// func redirectHandler()
//
// A signal handler (the C calling convention: DI = signal, SI = siginfo,
// DX = context): tgkill(redirectTgid, redirectTid, signal), unless either
// is 0 or this thread is redirectTid itself. sigreturn restores every
// register, so none needs saving.
TEXT ·redirectHandler(SB),NOSPLIT|NOFRAME,$0-0
	MOVL	DI, R12                   // the signal
	MOVL	$186, AX                  // SYS_gettid
	SYSCALL
	MOVL	·redirectTid(SB), SI
	CMPL	SI, $0
	JLE	done
	CMPL	AX, SI
	JEQ	done                      // on the signal thread: see redirect.go
	MOVL	·redirectTgid(SB), DI
	CMPL	DI, $0
	JLE	done
	MOVL	R12, DX
	MOVL	$234, AX                  // SYS_tgkill
	SYSCALL
done:
	RET

// func redirectHandlerPC() uintptr
TEXT ·redirectHandlerPC(SB),NOSPLIT,$0-8
	MOVQ	$·redirectHandler(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
