package probes

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

func execProbe(t *testing.T, timeout time.Duration, argv ...string) Handler {
	t.Helper()
	h, err := NewHandler(spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: argv}}, Timeout: timeout}, ExecContext{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestExecProbeRealCommands(t *testing.T) {
	// P10 with real processes: exit 0 Success, non-zero Failure, cannot
	// run Unknown + error.
	if r, _, err := execProbe(t, 5*time.Second, "/bin/true").Probe(context.Background()); r != Success || err != nil {
		t.Fatalf("true: %v %v", r, err)
	}
	d, err := execProbe(t, 5*time.Second, "sh", "-c", "echo sick; exit 2").(DetailedHandler).ProbeDetail(context.Background())
	if d.Result != Failure || err != nil || d.Message != "command exited with code 2" || string(d.Output) != "sick\n" {
		t.Fatalf("exit 2: %+v %v", d, err)
	}
	if r, _, err := execProbe(t, 5*time.Second, "/nonexistent/check").Probe(context.Background()); r != Unknown || err == nil {
		t.Fatalf("missing command: %v %v", r, err)
	}
}

func TestExecProbeHangKilledAtTimeout(t *testing.T) {
	// P10: a hanging probe is killed at its timeout, counts as Failure,
	// and leaves no process behind: neither the command nor its child.
	dir := t.TempDir()
	h := execProbe(t, 300*time.Millisecond, "sh", "-c", `echo $$ > "$0/sh.pid"; sleep 100 & echo $! > "$0/child.pid"; wait`, dir)
	var pubs []Update
	s := newStepper(spec.Liveness, spec.Probe{FailureThreshold: 1}, h, func(u Update) { pubs = append(pubs, u) })
	s.doProbe(context.Background(), clock.Epoch, running("a"))
	if len(pubs) != 2 || pubs[1].Result != Failure || !strings.Contains(pubs[1].Message, "timed out") {
		t.Fatalf("published %+v, want a counted timeout Failure", pubs)
	}
	for _, f := range []string{"sh.pid", "child.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			t.Fatalf("%s: %q", f, b)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: pid %d outlived the probe's timeout", f, pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestExecProbeOutputCapped(t *testing.T) {
	// P10: 10 KiB of combined output kept from a 1 MB writer, which does
	// not block.
	d, err := execProbe(t, 30*time.Second, "sh", "-c", "head -c 1048576 /dev/zero; exit 1").(DetailedHandler).ProbeDetail(context.Background())
	if err != nil || d.Result != Failure || d.Message != "command exited with code 1" || len(d.Output) != MaxOutput {
		t.Fatalf("got %v %q %d bytes %v", d.Result, d.Message, len(d.Output), err)
	}
}

func BenchmarkExecProbeTrue(b *testing.B) {
	h, err := NewHandler(spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/true"}}}}, ExecContext{})
	if err != nil {
		b.Fatal(err)
	}
	before := selfCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, _, err := h.Probe(context.Background()); r != Success || err != nil {
			b.Fatal(r, err)
		}
	}
	b.StopTimer()
	// podsup's own CPU (not the children's) per probe: the design budget is
	// 100 probes/s under 5% of a core, i.e. under 500µs each.
	b.ReportMetric(float64(selfCPU(b)-before)/float64(b.N), "self-cpu-ns/op")
}

// selfCPU is this process's user+system CPU time so far, children excluded.
func selfCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
