package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
)

// BenchmarkRestartCPU reports podsup's own CPU time (getrusage
// RUSAGE_SELF: every thread of this process, not the children) per restart
// of a host process (no sandbox block) that exits at once, at back-off
// initial = 0, through hostrt.Runtime (process group, no cgroup: the
// host-spawn floor) and through SandboxRuntime with every group in a cgroup.
// Wall time on the shared machines swings more than the effect; CPU time
// per restart does not, so that is the figure (docs/benchmarks.md):
//
//	go test -run '^$' -bench RestartCPU -benchtime 2000x -count 3 ./supervisor
func BenchmarkRestartCPU(b *testing.B) {
	cmd := trueCommand(b)
	b.Run("host", func(b *testing.B) {
		restartCPU(b, hostrt.Runtime{}, cmd)
	})
	b.Run("cgroup", func(b *testing.B) {
		if os.Geteuid() != 0 {
			b.Skip("cgroups need root")
		}
		rt, err := sandbox.NewRuntime(sandbox.Options{Instance: fmt.Sprintf("bench-restart-%d", os.Getpid())})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		if !rt.CgroupsEnabled() {
			b.Skip("cgroups are unavailable here: nothing to compare")
		}
		restartCPU(b, stack.NewSandboxRuntime(rt, true), cmd)
	})
}

// countingRuntime closes done once the limit-th Start has returned; the
// rest of Runtime is the wrapped one's (SandboxRuntime's sandboxes are
// released).
type countingRuntime struct {
	supervisor.Runtime
	limit int
	n     int // only the group's worker calls Start
	done  chan struct{}
}

func (r *countingRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	inst, err := r.Runtime.Start(ctx, req)
	if r.n++; r.n == r.limit {
		close(r.done)
	}
	return inst, err
}

func restartCPU(b *testing.B, next supervisor.Runtime, cmd []string) {
	rt := &countingRuntime{Runtime: next, limit: b.N + 1, done: make(chan struct{})}
	g := spec.Group{
		Name: "bench", Backoff: &spec.Backoff{}, // initial 0, max 0: no wait ever
		Processes: []spec.Process{{Name: "true", Command: cmd}},
	}
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{g}}, supervisor.Options{Runtime: rt})
	if err != nil {
		b.Fatal(err)
	}
	res := make(chan struct{})
	b.ResetTimer()
	before := selfCPU(b)
	go func() {
		_, _ = sup.Run(context.Background())
		close(res)
	}()
	<-rt.done
	used := selfCPU(b) - before
	b.StopTimer()
	sup.RequestShutdown(nil)
	sup.RequestShutdown(nil)
	<-res
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/restart")
}

func selfCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
