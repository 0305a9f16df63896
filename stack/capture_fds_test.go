package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// emfileRuntime fails a start with EMFILE while another start is under
// way, or always with full: podsup's fds, shared by the starts in flight.
type emfileRuntime struct {
	*rttest.Recorder
	full bool

	mu              sync.Mutex
	underWay, calls int
}

type noInstance struct{}

func (noInstance) Pid() int                      { return 1 << 30 }
func (noInstance) Signal(syscall.Signal) error   { return nil }
func (noInstance) KillTree(syscall.Signal) error { return nil }
func (noInstance) Remove() error                 { return nil }

func (r *emfileRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	r.mu.Lock()
	r.underWay++
	r.calls++
	crowded := r.underWay > 1
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.underWay--; r.mu.Unlock() }()
	time.Sleep(5 * time.Millisecond) // under way a while: others overlap
	r.mu.Lock()
	crowded = crowded || r.underWay > 1
	r.mu.Unlock()
	if r.full || crowded {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode,
			Err: fmt.Errorf("starting process %q: sleep: %w", req.InstanceID, syscall.EMFILE)}
	}
	return noInstance{}, nil
}

// A start that ran out of fds while others were under way is tried once
// more alone; one that fails alone too gives the one reason that names
// podsup's limit.
func TestCapturingRuntimeRetriesEMFILEAlone(t *testing.T) {
	rt := &emfileRuntime{Recorder: &rttest.Recorder{}}
	c := newCapturingRuntime(rt, testHub(t))
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Start(context.Background(), supervisor.StartRequest{Group: "g", InstanceID: fmt.Sprint(i),
				Process: spec.Process{Name: fmt.Sprintf("p%d", i), Command: []string{"sleep", "1"}}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("start %d: %v, want it started on its retry alone", i, err)
		}
	}
	if rt.calls <= n {
		t.Errorf("%d calls for %d starts: no start overlapped another, the test tested nothing", rt.calls, n)
	}

	rt.full = true
	_, err := c.Start(context.Background(), supervisor.StartRequest{Group: "g", InstanceID: "x",
		Process: spec.Process{Name: "x", Command: []string{"sleep", "1"}}})
	if !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "too many open files: podsup's limit is") ||
		!strings.Contains(err.Error(), "LimitNOFILE=") {
		t.Fatalf("a start out of fds even alone: %v, want the reason naming podsup's limit", err)
	}
	var se *supervisor.StartError
	if !errors.As(err, &se) || se.Code != supervisor.StartErrorExitCode {
		t.Fatalf("a start out of fds: %#v, want a StartError", err)
	}
}
