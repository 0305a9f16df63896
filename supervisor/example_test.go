package supervisor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// A library user runs a group of real processes, reads its status and
// stops it, without HCL.
func Example() {
	cfg := spec.Config{Groups: []spec.Group{{
		Name:          "web",
		RestartPolicy: spec.RestartAlways,
		Processes: []spec.Process{
			{Name: "server", Command: []string{"sleep", "60"}},
		},
	}}}
	// Real processes on the host (package stack assembles podsup up's
	// whole runtime instead); otherwise zero options: the real clock, no
	// logging.
	sup, err := supervisor.New(cfg, supervisor.Options{Runtime: hostrt.Runtime{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	events := sup.Subscribe()
	defer events.Close()
	done := make(chan supervisor.Result, 1)
	go func() {
		res, _ := sup.Run(context.Background())
		done <- res
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitFor := func(reason string) lifecycle.Event {
		for {
			e, err := events.Next(ctx)
			if err != nil || e.Reason == reason {
				return e
			}
		}
	}

	waitFor(lifecycle.EventStarted)
	web, _ := sup.Status().Group("web")
	server, _ := web.Process("server")
	fmt.Println(web.Phase, server.Name, server.State, "restarts:", server.RestartCount, "has pid:", server.Pid > 0)

	_ = sup.Stop("web", "server", supervisor.RequestOptions{Requester: "example"})
	fmt.Println(waitFor(lifecycle.EventKilling).Message)
	// The exit is no event, as in kubelet: the status holds it.
	for server.State != lifecycle.StateTerminated && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		web, _ = sup.Status().Group("web")
		server, _ = web.Process("server")
	}
	fmt.Println(web.Phase, server.Name, server.State, server.Reason, "exit code:", server.Terminated.ExitCode, server.Terminated.Message)

	// Shutdown waits until every process has stopped, and SIGKILLs what
	// is left if ctx ends first.
	if err := sup.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println("supervisor exit code:", (<-done).ExitCode)
	// Output:
	// Running server running restarts: 0 has pid: true
	// Stopping process server: stop requested by example (grace 30s)
	// Stopped server terminated Stopped exit code: 143 killed by SIGTERM
	// supervisor exit code: 0
}
