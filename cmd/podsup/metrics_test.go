package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseExposition parses Prometheus's text format strictly: invalid
// exposition fails the test.
func parseExposition(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not valid exposition: %v\n%s", err, text)
	}
	return fams
}

// sample finds the value of family's sample with the given labels.
func sample(fams map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	f := fams[family]
	if f == nil {
		return 0, false
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
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// onlyWithTheirSource: families that exist only while one waits, with a
// CPU or pids cgroup of podsup's, or once a probe ran, which TestMetrics's
// groups lack (TestMetricsADashboardNeeds has them all).
func onlyWithTheirSource(name string) bool {
	switch name {
	case "podsup_process_waiting_reason", "podsup_pids", "podsup_pids_limit", "podsup_cpu_limit_cores",
		"podsup_cpu_cfs_periods_total", "podsup_cpu_cfs_throttled_periods_total", "podsup_cpu_cfs_throttled_seconds_total",
		"podsup_probe_total", "podsup_probe_duration_seconds":
		return true
	}
	return false
}

// TestMetrics: `podsup metrics` (GET /metrics on the control socket) and
// the metrics_listen TCP listener give valid exposition with every family,
// and the right values for a process restarted 3 times, one running, and
// one the OOM killer ended.
func TestMetrics(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	oomGroup := ""
	if os.Geteuid() == 0 {
		oomGroup = `
group "box" {
  restart_policy = "never"
  sandbox {
    resources {
      memory = "32Mi"
    }
  }
  process "hog" {
    command = ["python3", "-c", "x = bytearray(512 << 20)"]
  }
  process "idle" {
    command = ["sleep", "1000"]
  }
}`
	}
	f := startUp(t, `
supervisor {
  socket         = "%s"
  metrics_listen = "`+addr+`"
}
backoff {
  initial = "100ms"
  max     = "200ms"
}
group "web" {
  process "api" {
    command = ["sleep", "1000"]
  }
}
group "batch" {
  process "crash" {
    command = ["sh", "-c", "exit 3"]
  }
}`+oomGroup)
	var fams map[string]*dto.MetricFamily
	if !eventually(func() bool {
		code, out := f.ctl(t, "metrics")
		if code != 0 {
			return false
		}
		fams = parseExposition(t, out)
		n, _ := sample(fams, "podsup_process_restarts_total", map[string]string{"group": "batch", "process": "crash"})
		_, hogDone := sample(fams, "podsup_process_last_terminated_reason", map[string]string{"group": "box", "process": "hog"})
		return n >= 3 && (oomGroup == "" || hogDone)
	}) {
		_, out := f.ctl(t, "status")
		t.Fatalf("never saw 3 restarts (and the hog's end):\n%s", out)
	}
	for _, fam := range []string{"podsup_process_restarts_total", "podsup_process_ready", "podsup_process_state",
		"podsup_process_last_terminated_reason", "podsup_process_last_exit_code", "podsup_process_start_time_seconds",
		"podsup_process_backoff_seconds", "podsup_events_total", "process_resident_memory_bytes", "go_goroutines"} {
		if fams[fam] == nil {
			t.Errorf("no %s family", fam)
		}
	}
	// The dashboard in contrib/ charts only families that exist.
	dash, err := os.ReadFile("../../contrib/grafana/podsup.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`podsup_[a-z_]+`).FindAllString(string(dash), -1) {
		name = strings.TrimSuffix(name, "_bucket")
		if fams[name] == nil && !onlyWithTheirSource(name) {
			t.Errorf("contrib/grafana/podsup.json charts %s, which podsup does not export", name)
		}
	}
	crash := map[string]string{"group": "batch", "process": "crash"}
	if v, _ := sample(fams, "podsup_process_last_exit_code", crash); v != 3 {
		t.Errorf("batch/crash last exit code %v, want 3", v)
	}
	if v, ok := sample(fams, "podsup_process_last_terminated_reason", map[string]string{"group": "batch", "process": "crash", "reason": "Error"}); !ok || v != 1 {
		t.Errorf("batch/crash last terminated reason Error: %v %v", v, ok)
	}
	api := map[string]string{"group": "web", "process": "api"}
	if v, _ := sample(fams, "podsup_process_ready", api); v != 1 {
		t.Errorf("web/api ready %v, want 1", v)
	}
	if v, _ := sample(fams, "podsup_process_state", map[string]string{"group": "web", "process": "api", "state": "running"}); v != 1 {
		t.Errorf("web/api state running %v, want 1", v)
	}
	if v, _ := sample(fams, "podsup_process_start_time_seconds", api); v < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("web/api start time %v", v)
	}
	if v, ok := sample(fams, "podsup_events_total", map[string]string{"type": "Normal", "reason": "Started"}); !ok || v < 4 {
		t.Errorf("Normal Started events counted %v (%v), want at least 4", v, ok)
	}
	if oomGroup != "" {
		hog := map[string]string{"group": "box", "process": "hog", "reason": "OOMKilled"}
		if v, ok := sample(fams, "podsup_process_last_terminated_reason", hog); !ok || v != 1 {
			t.Errorf("box/hog OOMKilled: %v %v", v, ok)
		}
		if v, _ := sample(fams, "podsup_process_last_exit_code", map[string]string{"group": "box", "process": "hog"}); v != 137 {
			t.Errorf("box/hog last exit code %v, want 137", v)
		}
		idle := map[string]string{"group": "box", "process": "idle"}
		if v, ok := sample(fams, "podsup_memory_limit_bytes", idle); !ok || v != 32<<20 {
			t.Errorf("box/idle memory limit %v (%v), want 32Mi", v, ok)
		}
		if _, ok := sample(fams, "podsup_memory_working_set_bytes", idle); !ok {
			t.Error("no working set for box/idle")
		}
		if v, ok := sample(fams, "podsup_oom_events_total", map[string]string{"group": "box", "process": "hog"}); !ok || v != 1 {
			t.Errorf("box/hog OOM events %v (%v), want 1", v, ok)
		}
		if v, ok := sample(fams, "podsup_oom_events_total", idle); !ok || v != 0 {
			t.Errorf("box/idle OOM events %v (%v), want 0", v, ok)
		}
	}
	// The same over TCP.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics_listen %s: %v", addr, err)
	}
	var b strings.Builder
	_, _ = fmt.Fprint(&b, "")
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if fams := parseExposition(t, b.String()); fams["podsup_process_restarts_total"] == nil {
		t.Error("the TCP listener's exposition lacks podsup_process_restarts_total")
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
}

// TestMetricsListenRefusesARemoteAddress: a non-loopback metrics_listen
// needs metrics_allow_remote, and the error names the file and line.
func TestMetricsListenRefusesARemoteAddress(t *testing.T) {
	t.Parallel()
	// validate refuses a configuration with no group; this one has one.
	const oneGroup = "group \"g\" {\n  process \"p\" {\n    command = [\"true\"]\n  }\n}\n"
	dir := t.TempDir()
	cfg := dir + "/podsup.hcl"
	if err := os.WriteFile(cfg, []byte("supervisor {\n  metrics_listen = \"0.0.0.0:9310\"\n}\n"+oneGroup), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runPodsup(t, "validate", "-f", cfg)
	if code == 0 || !strings.Contains(out, "podsup.hcl:2") || !strings.Contains(out, "metrics_allow_remote") {
		t.Errorf("validate: %d %q", code, out)
	}
	if err := os.WriteFile(cfg, []byte("supervisor {\n  metrics_listen = \"0.0.0.0:9310\"\n  metrics_allow_remote = true\n}\n"+oneGroup), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runPodsup(t, "validate", "-f", cfg); code != 0 {
		t.Errorf("validate with metrics_allow_remote: %d %q", code, out)
	}
}
