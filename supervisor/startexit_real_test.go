package supervisor_test

import (
	"context"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// exitFirstRuntime is hostrt.Runtime whose Start returns only once the
// instance's exit has been reported: every exit comes before Start
// returned, the order Runtime allows and the supervisor must put right.
type exitFirstRuntime struct{ hostrt.Runtime }

func (r exitFirstRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	reported := make(chan struct{})
	onExit := req.OnExit
	req.OnExit = func(st lifecycle.ExitStatus) {
		onExit(st)
		close(reported)
	}
	inst, err := r.Runtime.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	<-reported
	return inst, nil
}

// TestRealExitReportedBeforeStartReturned: a process that exits at once
// (true), restarted without back-off, its every exit reported before its
// Start returned. The group must hear each start before its exit: an exit
// that overtook its start would be lost, and the instance would hang as
// running with no restart to follow.
func TestRealExitReportedBeforeStartReturned(t *testing.T) {
	t.Parallel()
	const restarts = 200
	g := spec.Group{
		Name: "g", Backoff: &spec.Backoff{}, // no wait between restarts
		Processes: []spec.Process{{Name: "true", Command: []string{"true"}}},
	}
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{g}}, supervisor.Options{Runtime: exitFirstRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan struct{})
	go func() {
		_, _ = sup.Run(context.Background())
		close(res)
	}()
	defer func() {
		sup.RequestShutdown(nil)
		sup.RequestShutdown(nil)
		<-res
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ps, _ := sup.Status().Groups[0].Process("true")
		if ps.RestartCount >= restarts {
			if ps.LastTermination != nil && ps.LastTermination.ExitCode != 0 {
				t.Fatalf("last termination: %+v", ps.LastTermination)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d restarts, want %d: an exit was lost (status %+v)", ps.RestartCount, restarts, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
