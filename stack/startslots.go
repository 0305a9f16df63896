package stack

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// startSlots bounds the starts under way (each holds a few fds until its
// child has them) and lets one start run alone, with no other under way:
// the retry of a start that ran out of fds (capturingRuntime.Start).
type startSlots struct {
	slots chan struct{} // one per start under way
	alone chan struct{} // full while a start takes every slot
}

func newStartSlots(n int) *startSlots {
	return &startSlots{slots: make(chan struct{}, n), alone: make(chan struct{}, 1)}
}

// aloneWait bounds how long a start waits to run alone: a start stuck
// elsewhere (a hung filesystem under its command) must not hold every
// other group's starts for longer than this.
const aloneWait = 30 * time.Second

// enter takes a slot, or with alone every slot, and returns the leave that
// gives them back. A nil gate bounds nothing.
func (g *startSlots) enter(ctx context.Context, alone bool) (leave func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	if !alone {
		if supervisor.MustNotWait(ctx) {
			select {
			case g.slots <- struct{}{}:
				return func() { <-g.slots }, nil
			default:
				return nil, supervisor.ErrWouldWait
			}
		}
		select {
		case g.slots <- struct{}{}:
			return func() { <-g.slots }, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	timer := time.NewTimer(aloneWait)
	defer timer.Stop()
	// Waited for like the slots: a start retried behind another (both
	// out of fds) still hears its cancellation and aloneWait.
	select {
	case g.alone <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, fmt.Errorf("another start ran alone for longer than %s", aloneWait)
	}
	taken := 0
	leave = func() {
		for range taken {
			<-g.slots
		}
		<-g.alone
	}
	for taken < cap(g.slots) {
		select {
		case g.slots <- struct{}{}:
			taken++
		case <-ctx.Done():
			leave()
			return nil, ctx.Err()
		case <-timer.C:
			leave()
			return nil, fmt.Errorf("other starts still under way after %s", aloneWait)
		}
	}
	return leave, nil
}

// tooManyOpenFiles is the one reason a start that ran out of fds gives,
// whichever of its steps failed (the output pipe, the cgroup placement,
// the fork): podsup's limit, what a process costs, and the fix.
type tooManyOpenFiles struct {
	limit      uint64
	perProcess int
	cause      error
}

func newTooManyOpenFiles(p spec.Process, cause error) *tooManyOpenFiles {
	e := &tooManyOpenFiles{cause: cause, perProcess: 1}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		e.limit = lim.Cur
	}
	switch {
	case p.Log.Mode == "passthrough" || p.Log.Journal:
		e.perProcess = 0
	case p.Log.SeparateStreams:
		e.perProcess = 2
	}
	if p.Readiness == "notify" {
		e.perProcess++
	}
	return e
}

func (e *tooManyOpenFiles) Error() string {
	return fmt.Sprintf("too many open files: podsup's limit is %d (RLIMIT_NOFILE), and its running processes "+
		"and itself hold them all; each running process holds about %d, a start %d more until its child has them; "+
		"raise podsup's limit (LimitNOFILE= in its unit, ulimit -n where it is started)",
		e.limit, e.perProcess, startFDs)
}

func (e *tooManyOpenFiles) Unwrap() error { return e.cause }

// startFDs is about what a start holds besides what its process keeps:
// the write end of its output pipe, its cgroup's directory, the fork's
// error pipe and pidfd, and the number above them its child dups to.
const startFDs = 6
