package systemd

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// wedgeRuntime blocks every Start until released: a group's worker loop
// stuck in a call, as a wedged podsup would be. The rest of
// supervisor.Runtime is hostrt.Runtime's: no sandbox, nothing kept.
type wedgeRuntime struct {
	hostrt.Runtime
	release chan struct{}
	entered chan struct{} // closed by the first Start
	once    *sync.Once
}

func (r wedgeRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	r.once.Do(func() { close(r.entered) })
	<-r.release
	return &idle{onExit: req.OnExit}, nil
}

// idle runs until signalled.
type idle struct {
	once   sync.Once
	onExit func(lifecycle.ExitStatus)
}

func (i *idle) Pid() int { return 1 << 22 }
func (i *idle) Signal(s syscall.Signal) error {
	i.once.Do(func() { i.onExit(lifecycle.ExitStatus{Code: 128 + int(s), Signal: s}) })
	return nil
}
func (i *idle) KillTree(s syscall.Signal) error { return i.Signal(s) }
func (i *idle) Remove() error                   { return nil }

// With a real supervisor whose worker is blocked, no WATCHDOG=1 goes out;
// once it is unblocked, the watchdog is fed again.
func TestWatchdogStarvesWhileTheSupervisorIsWedged(t *testing.T) {
	rt := wedgeRuntime{release: make(chan struct{}), entered: make(chan struct{}), once: new(sync.Once)}
	cfg := spec.Config{Groups: []spec.Group{{Name: "g", Processes: []spec.Process{{Name: "p", Command: []string{"x"}}}}}}
	sup, err := supervisor.New(cfg, supervisor.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{})
	go func() { _, _ = sup.Run(context.Background()); close(runDone) }()
	// Wedged from here on. (Before Run, Ping has no worker to ask and
	// says alive: on a loaded machine the first ping could come first.)
	select {
	case <-rt.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor never called Start")
	}
	m := newFakeManager(t)
	svc := NewService(sup, Options{Notifier: NewNotifier(m.path), Watchdog: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	svcDone := make(chan struct{})
	go func() { svc.Run(ctx); close(svcDone) }()
	defer func() { cancel(); <-svcDone }()

	count := func(d time.Duration) int {
		n := 0
		deadline := time.After(d)
		for {
			select {
			case s := <-m.msgs:
				if s == "WATCHDOG=1" {
					n++
				}
			case <-deadline:
				return n
			}
		}
	}
	if n := count(time.Second); n != 0 {
		t.Fatalf("%d WATCHDOG=1 while the worker was wedged", n)
	}
	close(rt.release)
	if n := count(time.Second); n < 2 {
		t.Fatalf("%d WATCHDOG=1 in 1s after the worker came back, want several (every 100ms)", n)
	}
	sup.RequestShutdown(nil)
	sup.RequestShutdown(nil)
	<-runDone
}
