package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/pid1"
)

// upSignals are the signals `podsup up` acts on: SIGHUP reloads; SIGTERM,
// SIGINT and SIGQUIT stop (SIGQUIT is the graceful stop of nginx and of
// images whose STOPSIGNAL it is, so a container runtime may send it).
var upSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP}

// straySignals would end podsup up if it did not ask for them, though it
// has no use for them: the Go runtime dumps its goroutines and exits on
// SIGABRT, and takes a SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV, SIGSTKFLT
// or SIGSYS sent from outside for a crash of its own. A supervisor that
// ends orphans what it runs, so these are caught and logged. (A fault of
// podsup's own still reaches the runtime: os/signal is handed only the
// ones sent with kill(2) and the like.)
var straySignals = []os.Signal{syscall.SIGABRT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGBUS,
	syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSTKFLT, syscall.SIGSYS}

// catchStraySignals keeps podsup up alive through every signal it does not
// act on: straySignals are logged; SIGPIPE is caught (silently: it comes
// with every write to a closed pipe, podsup's stderr too), so that a
// write to a closed stdout is an EPIPE instead of the end of podsup, as it
// is for a Go program that does not ask for SIGPIPE; 32 and 34, which have
// no Go handler at all, are dropped (pid1.DropUncatchable). Caught, not
// ignored: a process podsup starts gets every signal's default back at
// exec (except 32 and 34 on architectures without pid1's handler).
func catchStraySignals(log zerolog.Logger) {
	if !pid1.DropUncatchable() {
		log.Debug().Msg("signals 32 and 34 are ignored, and the processes podsup starts inherit that (no handler for this architecture)")
	}
	stray := make(chan os.Signal, 8)
	signal.Notify(stray, straySignals...)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	go func() {
		for {
			select {
			case s := <-stray:
				log.Warn().Str("signal", s.String()).Msg("signal ignored: podsup up stops on SIGTERM, SIGINT or SIGQUIT and reloads on SIGHUP")
			case <-pipe:
			}
		}
	}()
}

// escalateAfter is how long after the first stop signal a second one must
// come to escalate the stop to SIGKILL.
const escalateAfter = time.Second

// stopAction is what one SIGTERM, SIGINT or SIGQUIT to `podsup up` asks for.
type stopAction int

const (
	stopGracefully stopAction = iota // the first: every process through pre_stop and its grace
	stopDuplicate                    // a repeat within escalateAfter: changes nothing
	stopEscalate                     // a deliberate second request: SIGKILL what is still stopping
)

// stopRequests applies the double-signal rule of `podsup up`: the first
// SIGTERM, SIGINT or SIGQUIT starts the graceful stop; a later one escalates to
// SIGKILL only when it arrives at least escalateAfter after the first. One
// sooner is a duplicate — `timeout` signals the pid and then its process
// group, container runtimes and init systems may signal twice — and must
// never cut a grace period short. A user's second ^C a second later still
// escalates.
type stopRequests struct {
	first time.Time // zero until the first request
}

func (r *stopRequests) next(now time.Time) stopAction {
	switch {
	case r.first.IsZero():
		r.first = now
		return stopGracefully
	case now.Sub(r.first) < escalateAfter:
		return stopDuplicate
	default:
		return stopEscalate
	}
}

// handleUpSignals runs `podsup up`'s signal loop: SIGHUP reloads, SIGTERM
// and SIGINT stop under the stopRequests rule. reload must only ask for a
// reload (reloadQueue.request): the loop does no I/O, so that no reload
// can hold up a stop. The signals stay caught until podsup exits (never
// signal.Stop): one arriving while podsup winds down must not take its
// default action and change the exit status.
func handleUpSignals(sigs <-chan os.Signal, clk clock.Clock, reload func(), stop func(), escalate func(), log zerolog.Logger) {
	var req stopRequests
	for s := range sigs {
		if s == syscall.SIGHUP {
			reload()
			continue
		}
		switch req.next(clk.Now()) {
		case stopGracefully:
			log.Info().Str("signal", s.String()).Msg("stopping every group")
			stop()
		case stopDuplicate:
			log.Info().Str("signal", s.String()).Msg("already stopping: a second signal 1s or more after the first kills what is left")
		case stopEscalate:
			log.Warn().Str("signal", s.String()).Msg("second stop request: killing every process still stopping")
			escalate()
		}
	}
}
