package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/podsup/podsup/sandbox/proc"
)

// metricsNow scrapes podsup's metrics through `podsup metrics`.
func (f *upFixture) metricsNow(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, out := f.ctl(t, "metrics")
	if code != 0 {
		t.Fatalf("podsup metrics: exit %d\n%s", code, out)
	}
	return parseExposition(t, out)
}

// samplesOf is every sample of family whose labels include labels.
func samplesOf(fams map[string]*dto.MetricFamily, family string, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
	f := fams[family]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// TestInitsAreNotNotReady (issue 26, item 5): an init process that ran to
// completion is not in podsup_process_ready (so min by (group) is the
// group's readiness and the dashboard's "Not ready" panel does not list
// it) but in podsup_init_process_ready, 1 once it completed; and a group
// with a sidecar is Initialized once its inits completed and its sidecar
// started (kubelet's GeneratePodInitializedCondition), not False for its
// whole life.
func TestInitsAreNotNotReady(t *testing.T) {
	t.Parallel()
	f := startUp(t, `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "svc" {
  init "setup" {
    command = ["true"]
  }
  init "proxy" {
    restart_policy = "always"
    command = ["sleep", "1000"]
  }
  process "app" {
    command = ["sleep", "1000"]
  }
}`)
	f.waitRunning(t, "svc", "app")
	var fams map[string]*dto.MetricFamily
	if !eventually(func() bool {
		fams = f.metricsNow(t)
		v, ok := sample(fams, "podsup_process_ready", map[string]string{"group": "svc", "process": "app"})
		return ok && v == 1
	}) {
		t.Fatal("svc/app never ready in podsup_process_ready")
	}
	if s := samplesOf(fams, "podsup_process_ready", map[string]string{"group": "svc", "process": "setup"}); len(s) != 0 {
		t.Errorf("the completed init svc/setup is in podsup_process_ready (%v): min by (group) says the ready group is not", s)
	}
	for _, m := range samplesOf(fams, "podsup_process_ready", map[string]string{"group": "svc"}) {
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("podsup_process_ready %v is 0 in a ready group", m.GetLabel())
		}
	}
	if v, ok := sample(fams, "podsup_init_process_ready", map[string]string{"group": "svc", "process": "setup"}); !ok || v != 1 {
		t.Errorf("podsup_init_process_ready of the completed init: %v (%v), want 1", v, ok)
	}
	if v, ok := sample(fams, "podsup_process_ready", map[string]string{"group": "svc", "process": "proxy"}); !ok || v != 1 {
		t.Errorf("the sidecar's podsup_process_ready: %v (%v), want 1 (a sidecar's readiness is the group's)", v, ok)
	}
	if v, ok := sample(fams, "podsup_group_initialized", map[string]string{"group": "svc"}); !ok || v != 1 {
		t.Errorf("podsup_group_initialized %v (%v), want 1", v, ok)
	}
	d, err := f.c.Describe(context.Background(), "svc", "")
	if err != nil {
		t.Fatal(err)
	}
	var initialized, seen bool
	for _, c := range d.Group.Conditions {
		if c.Type == "Initialized" {
			initialized, seen = c.Status, true
		}
	}
	if !seen || !initialized {
		t.Errorf("describe: Initialized %v (shown %v), want True once setup completed and the sidecar started: %+v", initialized, seen, d.Group.Conditions)
	}
	if code, out := f.ctl(t, "describe", "svc"); code != 0 || !regexp.MustCompile(`(?m)^\s*Initialized\s+True\s*$`).MatchString(out) {
		t.Errorf("podsup describe svc (exit %d) does not show Initialized True:\n%s", code, out)
	}
}

// TestMetricsADashboardNeeds (issue 26, item 7): the families a dashboard
// needs are there with true values: probe counts and durations (kubelet's
// prober_probe_*), group readiness and phase, the last exit's time, CPU
// throttling and the CPU and pids limits (cAdvisor's), the build, the
// configuration's last load, and memory for a group without a memory
// limit on a cgroup v1 or hybrid host.
func TestMetricsADashboardNeeds(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: podsup makes cgroups with CPU and pids limits only as root (CI runs as root)")
	}
	f := startUp(t, `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "lim" {
  sandbox {
    resources {
      cpu  = 0.05
      pids = 64
    }
  }
  process "burn" {
    command = ["sh", "-c", "while :; do :; done"]
    readiness_probe {
      exec {
        command = ["true"]
      }
      period = "200ms"
    }
  }
}
group "plain" {
  process "idle" {
    command = ["sleep", "1000"]
  }
}
group "batch" {
  restart_policy = "never"
  process "crash" {
    command = ["sh", "-c", "exit 3"]
  }
}`)
	burn := map[string]string{"group": "lim", "process": "burn"}
	var fams map[string]*dto.MetricFamily
	if !eventually(func() bool {
		fams = f.metricsNow(t)
		ok, _ := sample(fams, "podsup_probe_total", map[string]string{"group": "lim", "process": "burn", "probe_type": "Readiness", "result": "successful"})
		thr, _ := sample(fams, "podsup_cpu_cfs_throttled_periods_total", burn)
		_, ended := sample(fams, "podsup_process_last_terminated_timestamp_seconds", map[string]string{"group": "batch", "process": "crash"})
		return ok >= 2 && thr > 0 && ended
	}) {
		_, out := f.ctl(t, "metrics")
		t.Fatalf("never saw 2 successful readiness probes, a throttled period and batch/crash's end:\n%s", out)
	}
	if v, ok := sample(fams, "podsup_probe_total", map[string]string{"group": "lim", "process": "burn", "probe_type": "Readiness", "result": "failed"}); !ok || v != 0 {
		t.Errorf("failed readiness probes %v (%v), want 0", v, ok)
	}
	if h := samplesOf(fams, "podsup_probe_duration_seconds", map[string]string{"group": "lim", "process": "burn", "probe_type": "Readiness"}); len(h) != 1 || h[0].GetHistogram().GetSampleCount() < 2 {
		t.Errorf("podsup_probe_duration_seconds of lim/burn: %v, want a histogram of at least 2 probes", h)
	}
	if v, ok := sample(fams, "podsup_group_ready", map[string]string{"group": "lim"}); !ok || v != 1 {
		t.Errorf("podsup_group_ready{lim} %v (%v), want 1", v, ok)
	}
	if v, ok := sample(fams, "podsup_group_phase", map[string]string{"group": "lim", "phase": "Running"}); !ok || v != 1 {
		t.Errorf("podsup_group_phase{lim,Running} %v (%v), want 1", v, ok)
	}
	if v, ok := sample(fams, "podsup_group_phase", map[string]string{"group": "lim", "phase": "Pending"}); !ok || v != 0 {
		t.Errorf("podsup_group_phase{lim,Pending} %v (%v), want 0", v, ok)
	}
	if v, _ := sample(fams, "podsup_process_last_terminated_timestamp_seconds", map[string]string{"group": "batch", "process": "crash"}); v < float64(time.Now().Add(-time.Hour).Unix()) || v > float64(time.Now().Add(time.Minute).Unix()) {
		t.Errorf("batch/crash last terminated at %v, want about now", v)
	}
	if v, ok := sample(fams, "podsup_cpu_limit_cores", burn); !ok || v < 0.049 || v > 0.051 {
		t.Errorf("podsup_cpu_limit_cores of lim/burn %v (%v), want 0.05", v, ok)
	}
	if v, ok := sample(fams, "podsup_cpu_cfs_periods_total", burn); !ok || v <= 0 {
		t.Errorf("podsup_cpu_cfs_periods_total of lim/burn %v (%v), want > 0", v, ok)
	}
	if v, ok := sample(fams, "podsup_cpu_cfs_throttled_seconds_total", burn); !ok || v <= 0 {
		t.Errorf("podsup_cpu_cfs_throttled_seconds_total of lim/burn %v (%v), want > 0", v, ok)
	}
	if v, ok := sample(fams, "podsup_pids_limit", burn); !ok || v != 64 {
		t.Errorf("podsup_pids_limit of lim/burn %v (%v), want 64", v, ok)
	}
	if v, ok := sample(fams, "podsup_memory_working_set_bytes", map[string]string{"group": "plain", "process": "idle"}); !ok || v <= 0 {
		t.Errorf("no memory for plain/idle, a group without a memory limit: %v (%v)", v, ok)
	}
	if b := samplesOf(fams, "podsup_build_info", nil); len(b) != 1 {
		t.Errorf("podsup_build_info: %v, want one sample", b)
	} else {
		labels := map[string]string{}
		for _, l := range b[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !strings.HasPrefix(labels["goversion"], "go") || labels["version"] == "" || labels["revision"] == "" {
			t.Errorf("podsup_build_info labels %v, want version, revision and goversion", labels)
		}
	}
	if v, ok := sample(fams, "podsup_config_last_reload_successful", nil); !ok || v != 1 {
		t.Errorf("podsup_config_last_reload_successful %v (%v), want 1 after a good start", v, ok)
	}
	// Every family the dashboard charts is here (waiting reasons only
	// while a process waits).
	dash, err := os.ReadFile("../../contrib/grafana/podsup.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`podsup_[a-z_]+`).FindAllString(string(dash), -1) {
		if fams[strings.TrimSuffix(name, "_bucket")] == nil && name != "podsup_process_waiting_reason" {
			t.Errorf("contrib/grafana/podsup.json charts %s, which podsup does not export", name)
		}
	}
	if v, _ := sample(fams, "podsup_config_last_reload_successful_timestamp_seconds", nil); v < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("podsup_config_last_reload_successful_timestamp_seconds %v, want podsup's start", v)
	}
}

// notifyListener is a stand-in for systemd's notify socket: the
// datagrams podsup sends.
func notifyListener(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 64)
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return path, ch
}

// waitDatagram waits for a notify datagram containing every one of want.
func waitDatagram(t *testing.T, ch <-chan string, want ...string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				t.Fatalf("notify socket closed before a datagram with %q", want)
			}
			all := true
			for _, w := range want {
				all = all && strings.Contains(d, w)
			}
			if all {
				return d
			}
		case <-deadline:
			t.Fatalf("no datagram with %q within 30s", want)
		}
	}
}

// TestRefusedReloadIsTold (issue 26, item 6): a refused reload, by
// `podsup reload` or SIGHUP, is in podsup's log, a Warning event
// ReloadFailed, podsup_config_last_reload_successful 0 (with the last
// success's time kept), and systemd's notify stream (READY=1 with STATUS=
// and ERRNO=, for Type=notify-reload); a good reload clears them.
func TestRefusedReloadIsTold(t *testing.T) {
	t.Parallel()
	notify, datagrams := notifyListener(t)
	const good = `
supervisor {
  socket = "%s"
}
group "web" {
  process "api" {
    command = ["sleep", "1000"]
  }
}`
	f := startUpWith(t, good, func(c *proc.Cmd) { c.Env = append(c.Env, "NOTIFY_SOCKET="+notify) })
	waitDatagram(t, datagrams, "READY=1")
	before := f.metricsNow(t)
	okAt, _ := sample(before, "podsup_config_last_reload_successful_timestamp_seconds", nil)
	if v, ok := sample(before, "podsup_config_last_reload_successful", nil); !ok || v != 1 {
		t.Fatalf("podsup_config_last_reload_successful %v (%v) after a good start, want 1", v, ok)
	}

	f.write(t, `group "web" { process "api" { command = [ } }`)
	if code, out := f.ctl(t, "reload"); code == 0 {
		t.Fatalf("podsup reload of a broken file: exit 0\n%s", out)
	}
	d := waitDatagram(t, datagrams, "READY=1", "ERRNO=")
	if !strings.Contains(d, "STATUS=reload refused") || !strings.Contains(d, "ERRNO=22") {
		t.Errorf("systemd was told %q, want READY=1 with STATUS=reload refused and ERRNO=22", d)
	}
	after := f.metricsNow(t)
	if v, ok := sample(after, "podsup_config_last_reload_successful", nil); !ok || v != 0 {
		t.Errorf("podsup_config_last_reload_successful %v (%v) after a refused reload, want 0", v, ok)
	}
	if v, _ := sample(after, "podsup_config_last_reload_successful_timestamp_seconds", nil); v != okAt {
		t.Errorf("the last success's time moved from %v to %v on a refused reload", okAt, v)
	}
	countRefusals := func() int {
		n := 0
		for _, e := range f.events(t) {
			if e.Reason == "ReloadFailed" {
				n += max(e.Count, 1) // a repeat joins its series, as kubelet's events do
				if e.Type != "Warning" || !strings.Contains(e.Message, "reload refused") {
					t.Errorf("ReloadFailed event %+v, want a Warning saying the reload was refused", e)
				}
			}
		}
		return n
	}
	if n := countRefusals(); n != 1 {
		t.Errorf("%d ReloadFailed events after a refused podsup reload, want 1", n)
	}
	// SIGHUP (systemctl reload) is refused the same way.
	if err := f.up.p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return countRefusals() == 2 }) {
		t.Errorf("no second ReloadFailed event after SIGHUP with the broken file")
	}
	if log := f.up.sofar(t); strings.Count(log, "reload refused") < 2 {
		t.Errorf("podsup's log does not tell both refusals:\n%s", log)
	}

	f.write(t, strings.Replace(good, "%s", f.socket, 1))
	if code, out := f.ctl(t, "reload"); code != 0 {
		t.Fatalf("podsup reload of the good file: exit %d\n%s", code, out)
	}
	waitDatagram(t, datagrams, "READY=1", "ERRNO=0")
	fixed := f.metricsNow(t)
	if v, _ := sample(fixed, "podsup_config_last_reload_successful", nil); v != 1 {
		t.Errorf("podsup_config_last_reload_successful %v after a good reload, want 1", v)
	}
	if v, _ := sample(fixed, "podsup_config_last_reload_successful_timestamp_seconds", nil); v <= okAt {
		t.Errorf("the last success's time %v did not move past %v", v, okAt)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
}
