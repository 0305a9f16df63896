package main

import (
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
)

// escalateAfter is how long after the first stop signal a second one must
// come to escalate the stop to SIGKILL.
const escalateAfter = time.Second

// stopAction is what one SIGTERM or SIGINT to `podsup up` asks for.
type stopAction int

const (
	stopGracefully stopAction = iota // the first: every process through pre_stop and its grace
	stopDuplicate                    // a repeat within escalateAfter: changes nothing
	stopEscalate                     // a deliberate second request: SIGKILL what is still stopping
)

// stopRequests applies the double-signal rule of `podsup up`: the first
// SIGTERM or SIGINT starts the graceful stop; a later one escalates to
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
// and SIGINT stop under the stopRequests rule. The signals stay caught
// until podsup exits (never signal.Stop): one arriving while podsup winds
// down must not take its default action and change the exit status.
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
