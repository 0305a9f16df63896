//go:build !podsup_portable

#include "textflag.h"

// func sigwaitForwardRaw(set *sigset, info *siginfo, fast sigset, pidfd int) (sig, errno uintptr, forwarded bool)
//
// rt_sigtimedwait(set, info, NULL, 8); then, when a signal was taken, it
// is in fast and pidfd >= 0: pidfd_send_signal(pidfd, sig, NULL, 0).
// forwarded reports that the second call returned 0. See sigwaitForward.
TEXT ·sigwaitForwardRaw(SB),NOSPLIT,$0-49
	MOVB	$0, forwarded+48(FP)
	MOVQ	set+0(FP), DI
	MOVQ	info+8(FP), SI
	MOVQ	$0, DX
	MOVQ	$8, R10
	MOVQ	$128, AX                  // SYS_rt_sigtimedwait
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	taken
	NEGQ	AX
	MOVQ	$0, sig+32(FP)
	MOVQ	AX, errno+40(FP)
	RET
taken:
	MOVQ	AX, sig+32(FP)
	MOVQ	$0, errno+40(FP)
	MOVQ	pidfd+24(FP), DI
	CMPQ	DI, $0
	JLT	done
	MOVQ	AX, SI
	DECQ	AX                        // bit sig-1 of fast
	MOVQ	fast+16(FP), R8
	BTQ	AX, R8
	JCC	done
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$424, AX                  // SYS_pidfd_send_signal
	SYSCALL
	CMPQ	AX, $0
	JNE	done
	MOVB	$1, forwarded+48(FP)
done:
	RET
