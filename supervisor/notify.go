package supervisor

import (
	"context"
	"fmt"

	"github.com/podsup/podsup/supervisor/internal/core"
)

// This file holds the seams for readiness protocols and for podsup's own
// service manager (package systemd and package notify): a process's
// free-form status line, a liveness round-trip through every worker, and
// change notifications for status snapshots.

// ReportStatus sets the status line one instance of a group's process
// reported about itself (sd_notify STATUS=...). It shows as
// ProcessStatus.StatusText while that instance is current.
func (s *Supervisor) ReportStatus(group, instanceID, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workers[group]
	if !ok {
		return fmt.Errorf("unable to deliver a status line to group %q: %w", group, ErrNotFound)
	}
	w.mb.put(core.StatusTextInput{Instance: instanceID, Text: text})
	return nil
}

// Ping returns nil once every group's worker has handled everything queued
// before the call: proof that the supervisor's loops are alive, which a
// Status call (served from snapshots) is not. A service manager's watchdog
// is fed only after a successful Ping. A worker held back on purpose (a
// replacement waiting for the group it replaces to stop) and a worker that
// has finished count as answered. Before Run there is no loop and Ping
// returns nil. It returns ctx's error when a worker does not answer in
// time.
func (s *Supervisor) Ping(ctx context.Context) error {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return nil
	}
	var waits []barrierInput
	var dones []chan struct{}
	ask := func(w *worker) {
		if w.waiting.Load() {
			return
		}
		b := barrierInput{done: make(chan struct{})}
		w.mb.put(b)
		waits = append(waits, b)
		dones = append(dones, w.done)
	}
	for _, w := range s.workers {
		ask(w)
	}
	for w := range s.retiring {
		ask(w)
	}
	s.mu.Unlock()
	for i, b := range waits {
		select {
		case <-b.done:
		case <-dones[i]:
		case <-ctx.Done():
			return fmt.Errorf("unable to reach every group's worker: %w", ctx.Err())
		}
	}
	return nil
}

// Stopping is closed when podsup begins to shut down: the first Shutdown
// or RequestShutdown, a cancelled Run context, or a critical exit (X9,
// X11).
func (s *Supervisor) Stopping() <-chan struct{} { return s.stopping }

// NotifyStatus makes the supervisor send to ch (without blocking: a full
// channel already holds a pending notice) whenever a group's status
// snapshot is replaced. Give it a channel with a buffer of 1 and read
// Status after each receive. Call stop to end the notices.
func (s *Supervisor) NotifyStatus(ch chan<- struct{}) (stop func()) {
	s.watchMu.Lock()
	if s.watchers == nil {
		s.watchers = map[chan<- struct{}]struct{}{}
	}
	s.watchers[ch] = struct{}{}
	s.watchMu.Unlock()
	return func() {
		s.watchMu.Lock()
		delete(s.watchers, ch)
		s.watchMu.Unlock()
	}
}

// statusChanged is called by a worker after it stored a new snapshot.
func (s *Supervisor) statusChanged() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for ch := range s.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
