package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// BenchmarkIdleGroupProbeCPU measures what an idle group of 100 processes,
// each with an exec liveness probe every second, costs podsup itself: the
// CPU time of this process (every goroutine: probe workers, spawning,
// the reaper, the group's worker) per second of wall time, in percent of
// one core. The probe commands' own CPU is their children's rusage and is
// not counted. Each iteration is one second of wall time; run it with
// -benchtime 10x for a 10 s window. "no-probes" is the same group without
// probes, the floor.
func BenchmarkIdleGroupProbeCPU(b *testing.B) {
	for _, withProbes := range []bool{true, false} {
		name := "exec-liveness-1s"
		if !withProbes {
			name = "no-probes"
		}
		b.Run(name, func(b *testing.B) { idleGroupCPU(b, 100, withProbes) })
	}
}

func idleGroupCPU(b *testing.B, n int, withProbes bool) {
	sleep := ""
	for _, p := range []string{"/bin/sleep", "/usr/bin/sleep"} {
		if _, err := os.Stat(p); err == nil {
			sleep = p
		}
	}
	if sleep == "" {
		b.Skip("no sleep(1) on this machine: the benchmark needs an idle program")
	}
	probeCmd := trueCommand(b)
	g := spec.Group{Name: "idle"}
	for i := 0; i < n; i++ {
		p := spec.Process{Name: fmt.Sprintf("p%03d", i), Command: []string{sleep, "3600"}}
		if withProbes {
			p.LivenessProbe = &spec.Probe{
				Handler: spec.Handler{Exec: &spec.ExecAction{Command: probeCmd}},
				Period:  time.Second,
			}
		}
		g.Processes = append(g.Processes, p)
	}
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{g}}, supervisor.Options{Runtime: hostrt.Runtime{}})
	if err != nil {
		b.Fatal(err)
	}
	sub := sup.Subscribe()
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		_, _ = sup.Run(context.Background())
		close(done)
	}()
	defer func() {
		sup.RequestShutdown(nil)
		sup.RequestShutdown(nil)
		<-done
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := sup.Status().Group("idle")
		running := 0
		for _, p := range st.Processes {
			if p.State == lifecycle.StateRunning {
				running++
			}
		}
		if running == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d processes running after 30 s", running, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // every probe worker has probed at least once

	var before, after unix.Rusage
	b.ResetTimer()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &before)
	t0 := time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	wall := time.Since(t0)
	_ = unix.Getrusage(unix.RUSAGE_SELF, &after)
	b.StopTimer()

	cpu := time.Duration(unix.TimevalToNsec(after.Utime)-unix.TimevalToNsec(before.Utime)) +
		time.Duration(unix.TimevalToNsec(after.Stime)-unix.TimevalToNsec(before.Stime))
	b.ReportMetric(100*float64(cpu)/float64(wall), "%core")
	b.ReportMetric(0, "ns/op")

	// The probes passed: nothing was unhealthy or restarted.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		e, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		if e.Reason == lifecycle.EventUnhealthy || e.Reason == lifecycle.EventKilling {
			b.Fatalf("an idle group's probe failed: %s %s", e.Reason, e.Message)
		}
	}
}

// BenchmarkOneExecProbeCPU measures what one exec probe costs at a given
// period, the figure spec.MinProbePeriod is chosen from: podsup's own CPU
// (RUSAGE_SELF) and the probe commands' (RUSAGE_CHILDREN: they are
// reaped, so their time lands there), per second of wall time, in percent
// of one core. The probe is a readiness probe running true(1) (pass) or
// false(1) (fail, the worst case: every run publishes an Unhealthy event,
// and nothing stops it). Each iteration is one second of wall time.
func BenchmarkOneExecProbeCPU(b *testing.B) {
	for _, result := range []string{"pass", "fail"} {
		for _, period := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second} {
			b.Run(result+"/period="+period.String(), func(b *testing.B) { oneProbeCPU(b, period, result == "pass") })
		}
	}
}

func oneProbeCPU(b *testing.B, period time.Duration, pass bool) {
	sleep, probe := "", ""
	name := "false"
	if pass {
		name = "true"
	}
	for _, dir := range []string{"/bin/", "/usr/bin/"} {
		if _, err := os.Stat(dir + "sleep"); err == nil {
			sleep = dir + "sleep"
		}
		if _, err := os.Stat(dir + name); err == nil {
			probe = dir + name
		}
	}
	if sleep == "" || probe == "" {
		b.Skipf("no sleep(1) or %s(1) on this machine: the benchmark needs both", name)
	}
	p := spec.Process{Name: "p", Command: []string{sleep, "3600"}, ReadinessProbe: &spec.Probe{
		Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{probe}}},
		Period:  period,
	}}
	// Validate refuses a period below spec.MinProbePeriod: build the
	// supervisor with a valid one, then shorten it through the shared
	// pointer before Run, to measure what the floor prevents.
	asked := period
	p.ReadinessProbe.Period = max(period, spec.MinProbePeriod)
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{{Name: "one", Processes: []spec.Process{p}}}}, supervisor.Options{Runtime: hostrt.Runtime{}})
	if err != nil {
		b.Fatal(err)
	}
	p.ReadinessProbe.Period = asked
	sub := sup.Subscribe()
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		_, _ = sup.Run(context.Background())
		close(done)
	}()
	defer func() {
		sup.RequestShutdown(nil)
		sup.RequestShutdown(nil)
		<-done
	}()
	// Drain the events as a subscriber (the history) would.
	go func() {
		for {
			if _, err := sub.Next(context.Background()); err != nil {
				return
			}
		}
	}()
	time.Sleep(2 * time.Second) // running, probing at its pace

	var selfBefore, selfAfter, kidsBefore, kidsAfter unix.Rusage
	b.ResetTimer()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &selfBefore)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &kidsBefore)
	t0 := time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	wall := time.Since(t0)
	_ = unix.Getrusage(unix.RUSAGE_SELF, &selfAfter)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &kidsAfter)
	b.StopTimer()
	used := func(a, z unix.Rusage) time.Duration {
		return time.Duration(unix.TimevalToNsec(z.Utime) - unix.TimevalToNsec(a.Utime) +
			unix.TimevalToNsec(z.Stime) - unix.TimevalToNsec(a.Stime))
	}
	self, kids := used(selfBefore, selfAfter), used(kidsBefore, kidsAfter)
	b.ReportMetric(100*float64(self)/float64(wall), "%core-podsup")
	b.ReportMetric(100*float64(self+kids)/float64(wall), "%core-total")
	b.ReportMetric(0, "ns/op")
}
