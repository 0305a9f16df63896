// Package clock owns time as a dependency. Every podsup decision that depends on
// time (back-off, probe periods, grace arithmetic, recreate deadlines) reads it
// through a Clock, so tests drive time with a Fake and never sleep.
//
// Readings from Now carry Go's monotonic component; decisions compare them with
// Sub/Before/After, which use that component, so a wall-clock jump (NTP, an
// operator's `date -s`) never moves a deadline. Wall time is for display only.
package clock

import "time"

// Clock is the time source a component is given.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d after Now.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer that podsup uses.
type Timer interface {
	// C is nil for timers made by AfterFunc.
	C() <-chan time.Time
	// Stop reports whether it stopped the timer before it fired.
	Stop() bool
	// Reset re-arms the timer to fire d from now.
	Reset(d time.Duration) bool
}

// Real is the system clock.
type Real struct{}

var _ Clock = Real{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Or returns c, or the real clock when c is nil, so zero-valued options work.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}
