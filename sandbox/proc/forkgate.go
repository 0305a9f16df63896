package proc

import (
	"sync"
	"time"
)

// forkGate lets one fork+exec run at a time, but never waits on a slow one
// for long: a spawn holds the gate until its exec is known or
// forkGatePatience has passed, whichever comes first.
//
// Why serialize at all: on a machine whose cores are saturated by a crash
// loop, concurrent syscall.ForkExec calls (each thread suspended in a
// CLONE_VFORK until its child execs, while holding syscall.ForkLock) made
// podsup's API answer several times slower than with the forks one at a
// time (docs/benchmarks.md, the soak check). Why not a plain mutex: an exec stuck
// on a hung filesystem or a frozen cgroup would then stall every spawn,
// which is what holding the reaper's lock across exec used to do. (The Go
// runtime's own stop-the-world still waits for a stuck exec: see "A limit
// of Go" in docs/architecture.md.)
//
// Only a spawn that finds the gate taken arms a timer. An uncontended
// entry, every restart's, arms none: a new timer sooner than any other
// wakes the runtime's poller thread (netpollBreak), which then competed
// with the fork it preceded for the same two cores (docs/benchmarks.md).
type forkGate struct {
	token    chan struct{} // capacity 1: full while the gate is held
	patience time.Duration

	// mu guards the record of the current hold. gen changes with every
	// entry, release and take-over, so a release or a take-over acts only
	// on the hold it saw; since is zero while no entry is recorded (the
	// gate is free, or its new holder has not recorded its entry yet).
	mu    sync.Mutex
	gen   uint64
	since time.Time
}

// forkGatePatience is how long a fork+exec keeps others waiting: far
// longer than an exec takes (a few milliseconds at most), so one still
// going after it is treated as stuck.
const forkGatePatience = 100 * time.Millisecond

var theForkGate = newForkGate(forkGatePatience)

func newForkGate(patience time.Duration) *forkGate {
	return &forkGate{token: make(chan struct{}, 1), patience: patience}
}

// enter waits for the gate (at most its patience behind a stuck holder,
// whose hold it then ends) and returns the release to call once the exec
// is known; calling it more than once, or after the hold was taken over,
// is harmless.
func (g *forkGate) enter() (release func()) {
	select {
	case g.token <- struct{}{}:
	default:
		g.waitForToken()
	}
	g.mu.Lock()
	g.gen++
	g.since = time.Now()
	mine := g.gen
	g.mu.Unlock()
	return func() { g.free(mine) }
}

// waitForToken takes the token once it is free or once the hold that has
// it has lasted the gate's patience.
func (g *forkGate) waitForToken() {
	for {
		g.mu.Lock()
		gen, since := g.gen, g.since
		g.mu.Unlock()
		wait := g.patience
		if !since.IsZero() {
			wait -= time.Since(since)
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case g.token <- struct{}{}:
				t.Stop()
				return
			case <-t.C:
			}
		}
		if !since.IsZero() {
			g.free(gen) // that holder is stuck; its own release will do nothing
		}
	}
}

// free ends hold gen, unless it has ended already.
func (g *forkGate) free(gen uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen != gen {
		return
	}
	g.gen++
	g.since = time.Time{}
	<-g.token // full: gen is the current hold
}
