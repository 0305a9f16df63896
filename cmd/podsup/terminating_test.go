package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

// terminatingConfig has the slow/drain, its pre_stop shortened to
// 5 s.
const terminatingConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "slow" {
  termination_grace_period = "30s"
  process "drain" {
    command = ["sleep", "1000"]
    pre_stop {
      sleep {
        duration = "5s"
      }
    }
  }
}
`

// stopWaitConfig has a process with a short pre_stop and one whose
// pre_stop outlasts the test's patience (but not the fixture's: its
// cleanup stops podsup within 20 s).
const stopWaitConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "m" {
  termination_grace_period = "30s"
  process "ok" {
    command = ["sleep", "1000"]
    pre_stop {
      sleep {
        duration = "2s"
      }
    }
  }
  process "long" {
    command = ["sleep", "1000"]
    pre_stop {
      sleep {
        duration = "12s"
      }
    }
  }
}
`

// processStatus is one process's status from the API.
func (f *upFixture) processStatus(t *testing.T, group, process string) api.ProcessStatus {
	t.Helper()
	st, err := f.c.Status(context.Background(), group, process)
	if err != nil || len(st.Groups) != 1 || len(st.Groups[0].Processes) != 1 {
		t.Fatalf("status %s/%s: %v %+v", group, process, err, st)
	}
	return st.Groups[0].Processes[0]
}

// S6, X13: `podsup stop` of a process with a long pre_stop shows it
// Terminating and not ready at once, in status, status -w and describe,
// while it still runs; afterwards its reason is Stopped, not Error, in
// status, metrics and events; `wait --for stopped` returns once it is gone.
func TestUpStopShowsTerminatingThenStopped(t *testing.T) {
	t.Parallel()
	f := startUp(t, terminatingConfig)
	pid := f.waitRunning(t, "slow", "drain")
	if p := f.processStatus(t, "slow", "drain"); !p.Ready || p.Terminating != nil {
		t.Fatalf("before the stop: %+v", p)
	}
	watch := start(t, podsupCmd(t, "--socket", f.socket, "status", "-w", "slow/drain"))
	for l := ""; !strings.Contains(l, "drain"); {
		l = watch.lineOr(t, "status -w: its first table")
	}

	if code, out := f.ctl(t, "stop", "slow/drain"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	stopped := time.Now()
	// Acceptance: within 1 s of `podsup stop` returning (the pre_stop
	// takes 5 s, the process keeps its pid all along). Timed by the
	// server's own clock (Terminating.Since, when the stop was decided),
	// not by how long a loaded machine takes to answer the polls.
	var p api.ProcessStatus
	for {
		p = f.processStatus(t, "slow", "drain")
		if p.Terminating != nil || time.Since(stopped) > 4*time.Second {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.State != "running" || p.Ready || p.Terminating == nil || p.Pid != pid || p.Terminating.Reason != "Stop" {
		t.Fatalf("S6: after the stop: %+v (terminating %+v), want running, not ready, terminating (Stop), pid %d", p, p.Terminating, pid)
	}
	if p.Terminating.Since == nil || p.Terminating.Since.Sub(stopped) > time.Second {
		t.Fatalf("S6: terminating since %v, want within 1s of the stop returning at %v", p.Terminating.Since, stopped)
	}
	t.Logf("terminating seen %s after stop returned (since %s)", time.Since(stopped), p.Terminating.Since.Sub(stopped))

	// status -w prints the change as it happens, long before the pre_stop
	// is over.
	for {
		l, ok := watch.lineWithin(t, 4*time.Second)
		if !ok {
			t.Fatal("S6: status -w printed no change line for the stop")
		}
		if strings.Contains(l, "drain") && strings.Contains(l, "Terminating") {
			if !strings.Contains(l, " no ") {
				t.Errorf("S6: status -w line %q, want READY no", l)
			}
			break
		}
	}
	_, out := f.ctl(t, "status", "slow/drain")
	if !strings.Contains(out, "running: Terminating") || strings.Contains(out, " yes ") {
		t.Errorf("S6: status while stopping:\n%s", out)
	}
	_, out = f.ctl(t, "describe", "slow/drain")
	if !strings.Contains(out, "Terminating:") || !strings.Contains(out, "Stop requested by") || !regexpLine(out, "Ready:", "False") {
		t.Errorf("S6: describe while stopping:\n%s", out)
	}

	// wait --for stopped returns once the process is gone, not before.
	code, out := f.ctl(t, "wait", "slow/drain", "--for", "stopped", "--timeout", "60s")
	if code != 0 || !strings.Contains(out, "slow/drain stopped") {
		t.Fatalf("wait --for stopped: %d %s", code, out)
	}
	p = f.processStatus(t, "slow", "drain")
	if p.State != "terminated" || p.Terminating != nil || p.Terminated == nil {
		t.Fatalf("after wait --for stopped: %+v, want terminated", p)
	}
	if p.Reason != "Stopped" || p.Terminated.Reason != "Stopped" || p.Terminated.ExitCode != 143 {
		t.Errorf("X13: ended %+v, want reason Stopped (exit 143 kept)", *p.Terminated)
	}
	if since := time.Since(stopped); since < 3*time.Second {
		t.Errorf("wait --for stopped returned %s after the stop, before the 5s pre_stop was over", since)
	}

	_, out = f.ctl(t, "status", "slow/drain")
	if !strings.Contains(out, "terminated: Stopped (exit 143)") {
		t.Errorf("X13: status after the stop:\n%s", out)
	}
	_, out = f.ctl(t, "metrics")
	want := `podsup_process_last_terminated_reason{group="slow",process="drain",reason="Stopped"} 1`
	if !strings.Contains(out, want) || strings.Contains(out, `process="drain",reason="Error"`) {
		t.Errorf("X13: metrics lack %s or say Error:\n%s", want, grepLines(out, "last_terminated_reason"))
	}
	code, out = f.ctl(t, "events")
	if code != 0 || !strings.Contains(out, "drain") {
		t.Errorf("X13: events: exit %d, no line of drain:\n%s", code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "drain") && strings.Contains(l, "Warning") {
			t.Errorf("X13: a requested stop made a warning: %s", l)
		}
	}
}

// X13: `podsup stop --wait` returns once the process is gone, with its
// reason Stopped; --timeout bounds the wait.
func TestUpStopWait(t *testing.T) {
	t.Parallel()
	f := startUp(t, stopWaitConfig)
	f.waitRunning(t, "m", "ok")
	f.waitRunning(t, "m", "long")

	begun := time.Now()
	code, out := f.ctl(t, "stop", "--wait", "m/ok")
	if code != 0 || !strings.Contains(out, "m/ok stopped") {
		t.Fatalf("stop --wait: %d %s", code, out)
	}
	if took := time.Since(begun); took < 1500*time.Millisecond {
		t.Errorf("stop --wait returned after %s, before the 2s pre_stop was over", took)
	}
	if p := f.processStatus(t, "m", "ok"); p.State != "terminated" || p.Reason != "Stopped" || p.Terminating != nil {
		t.Errorf("X13: right after stop --wait: %+v, want terminated: Stopped", p)
	}

	code, out = f.ctl(t, "stop", "--wait", "--timeout", "300ms", "m/long")
	if code != 1 || !strings.Contains(out, "timed out") {
		t.Errorf("stop --wait --timeout 300ms of a 12s pre_stop: %d %s, want exit 1, timed out", code, out)
	}
	if code, out := f.ctl(t, "stop", "--timeout", "1s", "m/long"); code == 0 || !strings.Contains(out, "--wait") {
		t.Errorf("stop --timeout without --wait: %d %s, want refused naming --wait", code, out)
	}
	// A second stop skips to SIGKILL (X9); the reason is still Stopped.
	if code, out := f.ctl(t, "stop", "--wait", "--timeout", "30s", "m/long"); code != 0 {
		t.Fatalf("second stop --wait: %d %s", code, out)
	}
	if p := f.processStatus(t, "m", "long"); p.Reason != "Stopped" || p.Terminated == nil || p.Terminated.ExitCode != 137 {
		t.Errorf("X13: killed on a second stop: %+v, want Stopped with exit 137", p)
	}
	// The whole group: wait --for stopped holds at once.
	if code, out := f.ctl(t, "wait", "m", "--for", "stopped", "--timeout", "0"); code != 0 {
		t.Errorf("wait m --for stopped --timeout 0: %d %s", code, out)
	}
}

// regexpLine reports a line of out holding key and then value.
func regexpLine(out, key, value string) bool {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, key); i >= 0 && strings.Contains(l[i:], value) {
			return true
		}
	}
	return false
}

// grepLines is the lines of out that hold s.
func grepLines(out, s string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
