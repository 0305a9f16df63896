package stack

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// writingRuntime stands for the runtime under the capture: each start
// writes a line naming its instance to its stdout, and keeps the request,
// so that a test may write later and report the exit. A start under
// WithoutWaiting answers ErrWouldWait when wouldWait is set, writing
// nothing.
type writingRuntime struct {
	*rttest.Recorder
	wouldWait bool
	last      supervisor.StartRequest
}

func (r *writingRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	if r.wouldWait && supervisor.MustNotWait(ctx) {
		return nil, supervisor.ErrWouldWait
	}
	if _, err := req.Stdout.WriteString("line of " + req.InstanceID + "\n"); err != nil {
		return nil, err
	}
	r.last = req
	return noInstance{}, nil
}

// lines waits for process p's current (or previous) instance to hold
// want.
func lines(t *testing.T, hub *logs.Hub, p string, previous bool, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ls, _ := hub.Tail("g", p, 0, previous)
		got = got[:0]
		for _, l := range ls {
			got = append(got, l.Text)
		}
		if slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("previous=%v: lines %q, want %q", previous, got, want)
}

func TestCapturingRuntimeWithdrawsAStartThatWouldWait(t *testing.T) {
	// An armed restart (R8) whose start would have to wait is made again
	// the usual way, under the same instance id: the capture attached for
	// it is withdrawn, so --previous is still the instance before.
	hub := testHub(t)
	rt := &writingRuntime{Recorder: &rttest.Recorder{}, wouldWait: true}
	c := newCapturingRuntime(rt, hub)
	req := func(id string) supervisor.StartRequest {
		return supervisor.StartRequest{Group: "g", InstanceID: id, Process: spec.Process{Name: "p", Command: []string{"x"}}}
	}
	if _, err := c.Start(context.Background(), req("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Start(supervisor.WithoutWaiting(context.Background()), req("2")); !errors.Is(err, supervisor.ErrWouldWait) {
		t.Fatalf("a start that would wait: %v, want ErrWouldWait", err)
	}
	if _, err := c.Start(context.Background(), req("2")); err != nil {
		t.Fatal(err)
	}
	lines(t, hub, "p", false, "line of 2")
	lines(t, hub, "p", true, "line of 1")
}

func TestCapturingRuntimeKeepsAnArmedProcessWriterUntilItsExit(t *testing.T) {
	// A process restarted at once keeps podsup's write end of its pipe
	// until its exit has been reported (the pipe then hangs up after the
	// next fork, not as the process exits); the output goes on to the
	// instance's end all the same, and the next start takes a pipe made in
	// advance.
	hub := testHub(t)
	rt := &writingRuntime{Recorder: &rttest.Recorder{}}
	c := newCapturingRuntime(rt, hub)
	exited := make(chan lifecycle.ExitStatus, 1)
	_, err := c.Start(context.Background(), supervisor.StartRequest{Group: "g", InstanceID: "1", RestartsAtOnce: true,
		Process: spec.Process{Name: "p", Command: []string{"x"}},
		OnExit:  func(st lifecycle.ExitStatus) { exited <- st }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.last.Stdout.WriteString("after the start\n"); err != nil {
		t.Fatalf("podsup's write end was closed once the process started: %v", err)
	}
	rt.last.OnExit(lifecycle.ExitStatus{Code: 3})
	if st := <-exited; st.Code != 3 {
		t.Fatalf("the exit reported is %+v, want code 3", st)
	}
	if _, err := rt.last.Stdout.WriteString("after the exit\n"); err == nil {
		t.Fatal("podsup's write end still open after the exit was reported")
	}
	lines(t, hub, "p", false, "line of 1", "after the start")
}
