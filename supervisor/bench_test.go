package supervisor_test

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// timingRuntime wraps hostrt.Runtime and records, per instance, when its
// exit was known (the reaper's callback) and when the next Start returned.
type timingRuntime struct {
	hostrt.Runtime
	limit int
	done  chan struct{}

	mu       sync.Mutex
	exits    []time.Time
	returned []time.Time
}

func (r *timingRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	onExit := req.OnExit
	req.OnExit = func(st lifecycle.ExitStatus) {
		now := time.Now()
		r.mu.Lock()
		r.exits = append(r.exits, now)
		r.mu.Unlock()
		onExit(st)
	}
	inst, err := r.Runtime.Start(ctx, req)
	now := time.Now()
	r.mu.Lock()
	r.returned = append(r.returned, now)
	if len(r.returned) == r.limit {
		close(r.done)
	}
	r.mu.Unlock()
	return inst, err
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// spawnerFloor samples the time proc.Start takes to start cmd, each
// run waiting for the previous one's exit.
func spawnerFloor(tb testing.TB, n int, cmd []string) []time.Duration {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		done := make(chan struct{})
		t0 := time.Now()
		p, err := proc.Start(&proc.Cmd{Path: cmd[0], Args: cmd, OnExit: func(proc.Exit) { close(done) }})
		ds = append(ds, time.Since(t0))
		if err != nil {
			tb.Fatal(err)
		}
		<-done
		_ = p.Close()
	}
	return ds
}

// restartReaction runs a process that exits at once under restart policy
// always with back-off initial = 0 and samples the time from an exit being
// known to the next instance's Start having returned.
func restartReaction(tb testing.TB, n int, cmd []string) []time.Duration {
	rt := &timingRuntime{limit: n + 1, done: make(chan struct{})}
	g := spec.Group{
		Name: "bench", Backoff: &spec.Backoff{}, // initial 0, max 0: no wait ever
		Processes: []spec.Process{{Name: "true", Command: cmd}},
	}
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{g}}, supervisor.Options{Runtime: rt})
	if err != nil {
		tb.Fatal(err)
	}
	res := make(chan struct{})
	go func() {
		_, _ = sup.Run(context.Background())
		close(res)
	}()
	<-rt.done
	sup.RequestShutdown(nil)
	sup.RequestShutdown(nil)
	<-res
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var ds []time.Duration
	for k := 0; k+1 < len(rt.returned) && k < len(rt.exits); k++ {
		ds = append(ds, rt.returned[k+1].Sub(rt.exits[k]))
	}
	return ds
}

func trueCommand(tb testing.TB) []string {
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return []string{p}
		}
	}
	tb.Skip("no true(1) on this machine: the benchmark needs a trivial program")
	return nil
}

// BenchmarkRestartReaction reports the median restart reaction (exit
// known → next instance started) at back-off initial = 0 beside the
// spawner floor (proc.Start alone), measured in alternating rounds so
// that machine noise hits both alike.
func BenchmarkRestartReaction(b *testing.B) {
	cmd := trueCommand(b)
	const rounds = 10
	per := max(b.N/rounds, 20)
	var floors, reactions []time.Duration
	for r := 0; r < rounds; r++ {
		floors = append(floors, spawnerFloor(b, per, cmd)...)
		reactions = append(reactions, restartReaction(b, per, cmd)...)
	}
	floor, reaction := median(floors), median(reactions)
	b.ReportMetric(float64(floor.Microseconds()), "floor-µs")
	b.ReportMetric(float64(reaction.Microseconds()), "reaction-µs")
	b.ReportMetric(float64(reaction)/float64(floor), "reaction/floor")
}
