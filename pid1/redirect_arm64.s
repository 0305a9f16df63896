//go:build !podsup_portable

#include "textflag.h"

// func redirectHandler()
//
// A signal handler (the C calling convention: R0 = signal, R1 = siginfo,
// R2 = context, LR = the kernel's return to sigreturn):
// tgkill(redirectTgid, redirectTid, signal), unless either is 0 or this
// thread is redirectTid itself. sigreturn restores every register, so none
// needs saving.
TEXT ·redirectHandler(SB),NOSPLIT|NOFRAME,$0-0
	MOVW	R0, R9                    // the signal
	MOVD	$178, R8                  // SYS_gettid
	SVC
	MOVW	·redirectTid(SB), R1
	CMPW	$0, R1
	BLE	done
	CMPW	R0, R1
	BEQ	done                      // on the signal thread: see redirect.go
	MOVW	·redirectTgid(SB), R0
	CMPW	$0, R0
	BLE	done
	MOVW	R9, R2
	MOVD	$131, R8                  // SYS_tgkill
	SVC
done:
	RET

// func redirectHandlerPC() uintptr
TEXT ·redirectHandlerPC(SB),NOSPLIT,$0-8
	MOVD	$·redirectHandler(SB), R0
	MOVD	R0, ret+0(FP)
	RET
