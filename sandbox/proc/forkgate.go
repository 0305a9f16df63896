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
// podsup's API answer 3-5x slower (status p99 ~200 ms against ~45 ms with
// the forks one at a time, 300 processes crash-looping on 2 cores: see
// docs/benchmarks.md, the soak check). Why not a plain mutex: an exec stuck
// on a hung filesystem or a frozen cgroup would then stall every spawn,
// which is what holding the reaper's lock across exec used to do. (The Go
// runtime's own stop-the-world still waits for a stuck exec: see "A limit
// of Go" in docs/architecture.md.)
type forkGate struct{ token chan struct{} }

// forkGatePatience is how long a fork+exec keeps others waiting. An exec
// here takes ~0.1-5 ms; one still going after this is treated as stuck.
const forkGatePatience = 100 * time.Millisecond

var theForkGate = forkGate{token: make(chan struct{}, 1)}

// enter waits for the gate (at most forkGatePatience behind a stuck
// holder, which has released it by then) and returns the release to call
// once the exec is known; calling it more than once is harmless.
func (g forkGate) enter() (release func()) {
	g.token <- struct{}{}
	var once sync.Once
	free := func() { once.Do(func() { <-g.token }) }
	t := time.AfterFunc(forkGatePatience, free)
	return func() {
		t.Stop()
		free()
	}
}
