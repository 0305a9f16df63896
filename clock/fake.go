package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Fake is a manually advanced clock for deterministic tests. Timers fire,
// in deadline order, only inside Advance or Set.
//
// A test that runs the code under test in another goroutine waits with
// BlockUntil for that code to arm its timers before it advances the clock,
// rather than polling in real time.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    int
	// armed is closed, and replaced, whenever a timer is armed: what
	// BlockUntil waits on.
	armed chan struct{}
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Epoch is a convenient fixed start for fake clocks.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(d, nil, make(chan time.Time, 1))
}

func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, fn, nil)
}

func (f *Fake) add(d time.Duration, fn func(), c chan time.Time) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t := &fakeTimer{clock: f, when: f.now.Add(d), fn: fn, c: c, seq: f.seq, armed: true}
	f.timers = append(f.timers, t)
	f.notifyArmed()
	return t
}

// notifyArmed wakes every BlockUntil waiting; f.mu is held.
func (f *Fake) notifyArmed() {
	if f.armed != nil {
		close(f.armed)
		f.armed = nil
	}
}

// BlockUntil blocks until at least n timers are armed (made by NewTimer or
// AfterFunc, or re-armed by Reset, and neither fired nor stopped since):
// the code under test has reached the point where it waits on the clock,
// and an Advance now fires what it waits for.
func (f *Fake) BlockUntil(n int) {
	_ = f.BlockUntilContext(context.Background(), n)
}

// BlockUntilContext is BlockUntil that gives up when ctx ends, returning
// ctx's error, so that a test can fail with a message instead of hanging.
func (f *Fake) BlockUntilContext(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return nil
		}
		if f.armed == nil {
			f.armed = make(chan struct{})
		}
		armed := f.armed
		f.mu.Unlock()
		select {
		case <-armed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Advance moves the clock forward by d, firing every timer due on the way at
// its own deadline (Now reads that deadline while it fires).
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the clock to t, firing due timers in order.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		next := f.nextDue(t)
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if next.when.After(f.now) {
			f.now = next.when
		}
		next.armed = false
		f.remove(next)
		fn, c, when := next.fn, next.c, next.when
		f.mu.Unlock()
		if fn != nil {
			fn()
		} else {
			select {
			case c <- when:
			default:
			}
		}
	}
}

// NextDeadline reports the earliest armed timer's deadline.
func (f *Fake) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nextDue(time.Time{})
	if n == nil {
		return time.Time{}, false
	}
	return n.when, true
}

// Pending is the number of armed timers.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// nextDue returns the earliest armed timer due at or before limit; a zero
// limit means no limit.
func (f *Fake) nextDue(limit time.Time) *fakeTimer {
	sort.SliceStable(f.timers, func(i, j int) bool {
		a, b := f.timers[i], f.timers[j]
		if !a.when.Equal(b.when) {
			return a.when.Before(b.when)
		}
		return a.seq < b.seq
	})
	if len(f.timers) == 0 || (!limit.IsZero() && f.timers[0].when.After(limit)) {
		return nil
	}
	return f.timers[0]
}

func (f *Fake) remove(t *fakeTimer) {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return
		}
	}
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	fn    func()
	c     chan time.Time
	seq   int
	armed bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.armed
	t.armed = false
	t.clock.remove(t)
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.armed
	t.clock.remove(t)
	t.clock.seq++
	t.seq = t.clock.seq
	t.when = t.clock.now.Add(d)
	t.armed = true
	t.clock.timers = append(t.clock.timers, t)
	t.clock.notifyArmed()
	return was
}
