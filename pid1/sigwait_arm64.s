//go:build !podsup_portable

#include "textflag.h"

// func sigwaitForwardRaw(set *sigset, info *siginfo, fast sigset, pidfd int) (sig, errno uintptr, forwarded bool)
//
// rt_sigtimedwait(set, info, NULL, 8); then, when a signal was taken, it
// is in fast and pidfd >= 0: pidfd_send_signal(pidfd, sig, NULL, 0).
// forwarded reports that the second call returned 0. See sigwaitForward.
TEXT ·sigwaitForwardRaw(SB),NOSPLIT,$0-49
	MOVB	ZR, forwarded+48(FP)
	MOVD	set+0(FP), R0
	MOVD	info+8(FP), R1
	MOVD	$0, R2
	MOVD	$8, R3
	MOVD	$137, R8                  // SYS_rt_sigtimedwait
	SVC
	CMN	$4095, R0
	BCC	taken
	NEG	R0, R0
	MOVD	ZR, sig+32(FP)
	MOVD	R0, errno+40(FP)
	RET
taken:
	MOVD	R0, sig+32(FP)
	MOVD	ZR, errno+40(FP)
	MOVD	pidfd+24(FP), R4
	CMP	$0, R4
	BLT	done
	SUB	$1, R0, R5                // bit sig-1 of fast
	MOVD	fast+16(FP), R6
	LSR	R5, R6, R6
	TBZ	$0, R6, done
	MOVD	R0, R1
	MOVD	R4, R0
	MOVD	$0, R2
	MOVD	$0, R3
	MOVD	$424, R8                  // SYS_pidfd_send_signal
	SVC
	CBNZ	R0, done
	MOVD	$1, R7
	MOVB	R7, forwarded+48(FP)
done:
	RET
