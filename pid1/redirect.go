package pid1

import (
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The Go runtime keeps SIGPROF and 34 unblocked on every thread it starts
// (SIGPROF for its profiler, 34 for musl's use) and no Go code can catch
// either on those threads: its SIGPROF handler only samples, and 34 has no
// Go handler at all. The kernel hands a process-directed signal to the
// main thread when that thread can take it — while the signal thread waits
// in sigtimedwait — and to any other thread that does not block it
// otherwise. So a SIGPROF or 34 sent while the signal thread is busy
// forwarding another signal, or merely descheduled between two waits,
// lands on a runtime thread.
//
// Where the architecture has one (redirect_*.s), a signal handler of a few
// instructions takes those two instead of the runtime: it re-sends the
// signal to the signal thread alone with tgkill(2). That thread blocks
// both, so the signal waits there until sigtimedwait takes it. The handler
// never enters Go, so it may run on any thread at any moment, and it does
// nothing when it runs on the signal thread itself (possible only while an
// embedding program's second Run forks with the signal unblocked), since
// re-sending there would deliver it again at once, forever. A signal it
// re-sends reaches the loop as one podsup sent itself (SI_TKILL from
// podsup's pid); only SIGURG of those is podsup's own (see selfSent).

// redirectTgid and redirectTid are where the handler re-sends a signal:
// this process and its signal thread. The handler reads them as plain
// 32-bit loads; 0 makes it do nothing (never a tgkill to a pid <= 0).
var redirectTgid, redirectTid atomic.Int32

// redirected is the signals whose disposition dropRedirected changes. 32 is
// among them although it is never forwarded (the C library's): without a
// handler its default action would end podsup, and the signal thread,
// which does not wait for it, takes the handler's re-sent one and drops it
// there (the handler does nothing on the signal thread).
var redirected = []syscall.Signal{syscall.SIGPROF, 32, 34}

// dropRedirected installs the redirecting handler for SIGPROF, 32 and 34
// with nowhere to send them yet, so that it drops them, and reports
// whether it could: false where the architecture has no handler, or when
// the runtime's own sigaction (whose flags, mask and restorer the
// handler's copies) cannot be read. Run calls it first: 32 and 34 have no
// Go handler, and their default action would end podsup, and orphan the
// child, if one came before the signal thread is ready for them
// (redirectTo).
func dropRedirected() bool {
	act, ok := handlerAction()
	if !ok {
		return false
	}
	redirectTid.Store(0) // the handler does nothing while either is 0
	redirectTgid.Store(0)
	for _, sig := range redirected {
		if rtSigaction(sig, &act, nil) != nil {
			return false
		}
	}
	return true
}

// redirectTo points the handler dropRedirected installed at thread tid,
// which must block the redirected signals by then, and reports whether it
// could.
func redirectTo(tid int) bool {
	pid := unix.Getpid()
	if tid <= 0 || pid <= 0 {
		return false
	}
	redirectTgid.Store(int32(pid))
	redirectTid.Store(int32(tid))
	return true
}

// handlerAction is the sigaction that installs redirectHandler: the
// runtime's own for SIGUSR1 (it installs its handler for that one at
// start, with the flags the kernel needs on this architecture: SA_SIGINFO,
// SA_ONSTACK, SA_RESTORER and its restorer) with the handler replaced. ok
// is false where the architecture has no handler or that sigaction cannot
// be read.
func handlerAction() (act sigaction, ok bool) {
	pc := redirectHandlerPC()
	if pc == 0 || rtSigaction(syscall.SIGUSR1, nil, &act) != nil || act.handler == sigDFL || act.handler == sigIGN {
		return sigaction{}, false
	}
	act.handler = pc
	return act, true
}

// DropUncatchable makes signals 32 and 34 harmless to this program. The Go
// runtime installs no handler for either (it leaves them to a C library),
// so their default action, the end of the program, applies to one sent
// from outside: `kill -34` would end a supervisor and orphan everything it
// runs. Where redirect.go's handler exists it is installed for both, and
// with no signal thread to pass them to it drops them; exec puts a
// handler back to the default, so the processes the program starts get
// both as usual. Elsewhere both are ignored (SIG_IGN), which the processes
// it starts then inherit; it reports false in that case. Call it once,
// early, and not in a program that calls Run (whose own handling of 34 it
// would replace).
func DropUncatchable() (handled bool) {
	act, ok := handlerAction()
	handled = ok
	for _, sig := range looseSignals {
		if !ok || rtSigaction(sig, &act, nil) != nil {
			ignoreIfDefault(sig)
			handled = false
		}
	}
	return handled
}
