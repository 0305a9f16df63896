package core

import (
	"time"

	"github.com/podsup/podsup/spec"
)

// Backoff is client-go's flowcontrol.Backoff as the kubelet configures it for
// CrashLoopBackOff (docs/semantics.md B1–B4), without jitter (B14) and without a
// clock of its own: every call takes the current time as an argument, so it
// is a pure function of its inputs and its entries.
//
// Entries are keyed per process (B12). They are never deleted while the
// group lives (B5); Forget drops one when its process leaves the config.
type Backoff struct {
	initial time.Duration
	max     time.Duration
	reset   time.Duration
	entries map[string]backoffEntry
}

type backoffEntry struct {
	backoff    time.Duration
	lastUpdate time.Time
}

// NewBackoff returns an empty back-off with p's parameters. As with the
// kubelet's maxContainerRestartPeriod (B1), an initial above max is lowered
// to max.
func NewBackoff(p spec.Backoff) *Backoff {
	initial := p.Initial
	if initial > p.Max {
		initial = p.Max
	}
	return &Backoff{initial: initial, max: p.Max, reset: p.Reset, entries: map[string]backoffEntry{}}
}

// expired is B4: an entry is forgotten when the instance that just finished
// (eventTime = its FinishedAt) ended more than reset after the last Next.
func (b *Backoff) expired(e backoffEntry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > b.reset
}

// Next records one more start after the instance that finished at eventTime
// (B2): a missing or expired entry becomes initial, any other doubles up to
// max. lastUpdate is now, the time of the call, not eventTime.
func (b *Backoff) Next(key string, eventTime, now time.Time) {
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		e.backoff = b.initial
	} else {
		e.backoff = min(2*e.backoff, b.max)
	}
	e.lastUpdate = now
	b.entries[key] = e
}

// IsInBackOffSince reports whether a start now, after the instance that
// finished at eventTime, must wait (B3). The comparison is strict:
// now − eventTime == backoff is not in back-off.
func (b *Backoff) IsInBackOffSince(key string, eventTime, now time.Time) bool {
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		return false
	}
	return now.Sub(eventTime) < e.backoff
}

// Get is the current back-off of key, 0 when it has none.
func (b *Backoff) Get(key string) time.Duration { return b.entries[key].backoff }

// alwaysZero reports that every back-off is zero: initial is 0s, and
// doubling 0 stays 0 whatever the count.
func (b *Backoff) alwaysZero() bool { return b.initial == 0 }

// Forget drops key's entry (B5's garbage collection).
func (b *Backoff) Forget(key string) { delete(b.entries, key) }
