package systemd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// fakeSup is a Supervisor whose status the test sets.
type fakeSup struct {
	mu       sync.Mutex
	st       supervisor.Status
	watchers []chan<- struct{}
	stopping chan struct{}
	stopOnce sync.Once
	// pingBlock, while non-nil, holds every Ping until it is closed or
	// the Ping's context ends.
	pingBlock chan struct{}
	pings     int
}

func newFakeSup(st supervisor.Status) *fakeSup {
	return &fakeSup{st: st, stopping: make(chan struct{})}
}

func (f *fakeSup) Status() supervisor.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeSup) set(st supervisor.Status) {
	f.mu.Lock()
	f.st = st
	ws := f.watchers
	f.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (f *fakeSup) NotifyStatus(ch chan<- struct{}) func() {
	f.mu.Lock()
	f.watchers = append(f.watchers, ch)
	f.mu.Unlock()
	return func() {}
}

func (f *fakeSup) Ping(ctx context.Context) error {
	f.mu.Lock()
	f.pings++
	block := f.pingBlock
	f.mu.Unlock()
	if block == nil {
		return nil
	}
	select {
	case <-block:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeSup) Stopping() <-chan struct{} { return f.stopping }
func (f *fakeSup) stop()                     { f.stopOnce.Do(func() { close(f.stopping) }) }

// status builds a Status of groups with one process each; each entry says
// whether that process is running and ready, or crash-looping.
func status(groups ...string) supervisor.Status {
	var st supervisor.Status
	for i, g := range groups {
		p := lifecycle.ProcessStatus{Name: "p"}
		gs := lifecycle.GroupStatus{Name: string(rune('a' + i)), Phase: lifecycle.PhaseRunning}
		switch g {
		case "ready":
			p.State, p.Ready, p.Started = lifecycle.StateRunning, true, true
		case "starting":
			p.State, p.Started = lifecycle.StateRunning, true
		case "backoff":
			p.State, p.Reason = lifecycle.StateWaiting, lifecycle.ReasonCrashLoopBackOff
		case "pending":
			gs.Phase = lifecycle.PhasePending
			p.State, p.Reason = lifecycle.StateWaiting, lifecycle.ReasonPodInitializing
		}
		gs.Processes = []lifecycle.ProcessStatus{p}
		st.Groups = append(st.Groups, gs)
	}
	return st
}

func runService(t *testing.T, sup *fakeSup, opts Options) (*Service, *fakeManager, func()) {
	t.Helper()
	m := newFakeManager(t)
	opts.Notifier = NewNotifier(m.path)
	s := NewService(sup, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	return s, m, func() { cancel(); <-done }
}

// The documented sequence: status lines while starting, READY=1 only when
// every group is ready, status kept current, RELOADING=1 + MONOTONIC_USEC
// then READY=1 around a reload, STOPPING=1, and never READY=1 after it.
func TestServiceSequence(t *testing.T) {
	sup := newFakeSup(status("pending", "starting"))
	s, m, stop := runService(t, sup, Options{})
	defer stop()
	if got := m.next(t); got != "STATUS=0/2 groups ready, 0 in back-off" {
		t.Fatalf("first message %q", got)
	}
	sup.set(status("ready", "starting"))
	if got := m.next(t); got != "STATUS=1/2 groups ready, 0 in back-off" {
		t.Fatalf("got %q, want a status line and no READY=1 yet", got)
	}
	sup.set(status("ready", "ready"))
	if got := m.next(t); got != "READY=1\nSTATUS=2/2 groups ready, 0 in back-off" {
		t.Fatalf("got %q, want READY=1", got)
	}
	sup.set(status("ready", "backoff"))
	if got := m.next(t); got != "STATUS=1/2 groups ready, 1 in back-off" {
		t.Fatalf("got %q, want the status kept current (and no second READY=1)", got)
	}
	sup.set(status("ready", "backoff")) // no change, no message
	m.none(t, 100*time.Millisecond)

	applyErr := errors.New("bad config")
	err := s.Reload(func() error {
		got := m.next(t)
		lines := strings.Split(got, "\n")
		if len(lines) != 3 || lines[0] != "RELOADING=1" || !strings.HasPrefix(lines[1], "MONOTONIC_USEC=") || lines[2] != "STATUS=reloading configuration" {
			t.Errorf("reload began with %q", got)
		}
		sup.set(status("ready", "ready")) // no status line while reloading
		return applyErr
	})
	if err != applyErr {
		t.Fatalf("Reload returned %v, want apply's error", err)
	}
	// A refused reload is told to systemd: the status line says so and
	// ERRNO= marks the unit until a reload succeeds.
	if got := m.next(t); got != "READY=1\nSTATUS=reload refused, the running configuration stays: bad config\nERRNO=22" {
		t.Fatalf("refused reload ended with %q, want READY=1 with its error", got)
	}
	// The status change during the refused reload may bring its status
	// line first.
	untilReloading := func() error {
		for got := m.next(t); !strings.HasPrefix(got, "RELOADING=1"); got = m.next(t) {
			if !strings.HasPrefix(got, "STATUS=") {
				t.Errorf("got %q, want RELOADING=1 or a status line", got)
			}
		}
		return nil
	}
	if err := s.Reload(untilReloading); err != nil {
		t.Fatal(err)
	}
	if got := m.next(t); got != "READY=1\nSTATUS=2/2 groups ready, 0 in back-off\nERRNO=0" {
		t.Fatalf("reload after a refused one ended with %q, want READY=1 clearing ERRNO", got)
	}
	if err := s.Reload(untilReloading); err != nil {
		t.Fatal(err)
	}
	if got := m.next(t); got != "READY=1\nSTATUS=2/2 groups ready, 0 in back-off" {
		t.Fatalf("reload ended with %q, want READY=1", got)
	}
	if got := ReloadRefusedStatus(errors.New("a\x1b[31mb\nsecond line")); got != `reload refused, the running configuration stays: a\x1b[31mb` {
		t.Fatalf("status of a refused reload %q, want its first line without control characters", got)
	}
	sup.stop()
	if got := m.next(t); got != "STOPPING=1\nSTATUS=stopping: 2/2 groups ready, 0 in back-off" {
		t.Fatalf("got %q, want STOPPING=1", got)
	}
	s.Stop() // idempotent
	if err := s.Reload(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	sup.set(status("starting", "ready"))
	if got := m.next(t); got != "STATUS=stopping: 1/2 groups ready, 0 in back-off" {
		t.Fatalf("got %q, want a stopping status line only", got)
	}
	m.none(t, 100*time.Millisecond)
}

// With notify_ready = "started", READY=1 goes out at once.
func TestServiceReadyWhenStarted(t *testing.T) {
	sup := newFakeSup(status("pending"))
	_, m, stop := runService(t, sup, Options{ReadyWhen: ReadyWhenStarted})
	defer stop()
	if got := m.next(t); got != "READY=1\nSTATUS=0/1 groups ready, 0 in back-off" {
		t.Fatalf("got %q, want READY=1 at once", got)
	}
}

// A reload before podsup was first ready sends nothing: READY=1 is still
// owed for the start. A shutdown before ready sends STOPPING=1, never
// READY=1.
func TestServiceReloadAndStopBeforeReady(t *testing.T) {
	sup := newFakeSup(status("starting"))
	s, m, stop := runService(t, sup, Options{})
	defer stop()
	m.next(t) // the first status line
	ran := false
	_ = s.Reload(func() error { ran = true; return nil })
	if !ran {
		t.Fatal("apply did not run")
	}
	m.none(t, 100*time.Millisecond)
	sup.stop()
	if got := m.next(t); !strings.HasPrefix(got, "STOPPING=1\n") {
		t.Fatalf("got %q, want STOPPING=1", got)
	}
	sup.set(status("ready"))
	if got := m.next(t); strings.Contains(got, "READY=1") {
		t.Fatalf("READY=1 after STOPPING=1: %q", got)
	}
}

// WATCHDOG=1 goes out every half interval on the Service's clock, and only
// while Ping answers within the half interval.
func TestWatchdogCadenceAndStarvation(t *testing.T) {
	fc := clock.NewFake(clock.Epoch)
	sup := newFakeSup(status("ready"))
	_, m, stop := runService(t, sup, Options{Watchdog: 2 * time.Second, Clock: fc})
	defer stop()
	var watchdogs, others []string
	collect := func(d time.Duration) {
		deadline := time.After(d)
		for {
			select {
			case s := <-m.msgs:
				if s == "WATCHDOG=1" {
					watchdogs = append(watchdogs, s)
				} else {
					others = append(others, s)
				}
			case <-deadline:
				return
			}
		}
	}
	collect(200 * time.Millisecond)
	if len(watchdogs) != 1 {
		t.Fatalf("%d WATCHDOG=1 at start, want 1 (others %q)", len(watchdogs), others)
	}
	// Three half intervals: three more.
	for i := 0; i < 3; i++ {
		waitTimers(t, fc, 1)
		fc.Advance(time.Second)
		collect(100 * time.Millisecond)
	}
	if len(watchdogs) != 4 {
		t.Fatalf("%d WATCHDOG=1 after 3 half intervals, want 4", len(watchdogs))
	}
	// Wedge the supervisor: pings time out after the half interval and
	// nothing is sent.
	sup.mu.Lock()
	sup.pingBlock = make(chan struct{})
	sup.mu.Unlock()
	for i := 0; i < 4; i++ {
		waitTimers(t, fc, 1)
		fc.Advance(time.Second)
		collect(100 * time.Millisecond)
	}
	if len(watchdogs) != 4 {
		t.Fatalf("WATCHDOG=1 sent while Ping was blocked (%d)", len(watchdogs))
	}
	sup.mu.Lock()
	close(sup.pingBlock)
	sup.pingBlock = nil
	sup.mu.Unlock()
	collect(200 * time.Millisecond)
	if len(watchdogs) != 5 {
		t.Fatalf("%d WATCHDOG=1 once Ping answered again, want 5", len(watchdogs))
	}
}

// waitTimers waits until the fake clock has at least n pending timers.
func waitTimers(t *testing.T, fc *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if fc.BlockUntilContext(ctx, n) != nil {
		t.Fatalf("fake clock: %d timers pending, want %d", fc.Pending(), n)
	}
}
