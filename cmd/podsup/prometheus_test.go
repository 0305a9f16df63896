package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

// The exposition checked by Prometheus's own tools, and the shipped
// dashboard's queries run against a real Prometheus scraping podsup
// (issue 26, Build). Both need Debian's prometheus package (promtool and
// the server); CI installs it (scripts/check-metrics), and sets
// PODSUP_REQUIRE_PROMETHEUS=1 so that a missing one fails instead of
// skipping.

// needTool finds a tool of the prometheus package, or skips saying how
// to get it (fails when PODSUP_REQUIRE_PROMETHEUS is set).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := name + " is not installed: apt-get install prometheus (Debian's package ships promtool and the server; CI installs it with scripts/check-metrics)"
		if os.Getenv("PODSUP_REQUIRE_PROMETHEUS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// freeLoopbackPort is a port on 127.0.0.1 nothing listened on a moment
// ago.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// dashboardConfig has what every panel of contrib/grafana/podsup.json
// charts: a group with CPU, pids and memory limits, a readiness probe and a
// throttled busy loop; one without limits; one whose process ended; one
// that crash-loops (restarts, back-off, Warning events, not ready).
const dashboardConfig = `
supervisor {
  socket         = "%s"
  minimum_grace  = "100ms"
  metrics_listen = "METRICS"
}
backoff {
  initial = "2s"
  max     = "2s"
}
group "lim" {
  sandbox {
    resources {
      cpu    = 0.05
      pids   = 64
      memory = "64Mi"
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
}
group "flap" {
  process "crash" {
    command = ["sh", "-c", "sleep 0.2; exit 1"]
  }
}`

// scrape GETs url's body.
func scrape(t *testing.T, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// TestMetricsPassPromtool: `promtool check metrics` (Prometheus's lint of
// the text exposition) finds nothing wrong in what podsup serves.
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool := needTool(t, "promtool")
	addr := freeLoopbackPort(t)
	f := startUp(t, strings.Replace(dashboardConfig, "METRICS", addr, 1))
	f.waitRunning(t, "plain", "idle")
	var text string
	if !eventually(func() bool {
		var err error
		text, err = scrape(t, "http://"+addr+"/metrics")
		return err == nil && strings.Contains(text, "podsup_process_ready")
	}) {
		t.Fatalf("no metrics on %s", addr)
	}
	file := filepath.Join(t.TempDir(), "metrics.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	s := start(t, &proc.Cmd{Path: promtool, Args: []string{"promtool", "check", "metrics"}, Stdin: in})
	out := s.rest(t)
	if code := s.wait(t).Code(); code != 0 {
		t.Fatalf("promtool check metrics: exit %d\n%s", code, out)
	}
}

// promQuery runs an instant query through Prometheus's HTTP API and
// returns the number of series (or points) in its result.
func promQuery(t *testing.T, base, expr string) (int, error) {
	t.Helper()
	body, err := scrape(t, base+"/api/v1/query?query="+url.QueryEscape(expr))
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if jerr := json.Unmarshal([]byte(body), &r); jerr != nil {
		if err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("not Prometheus's JSON (%v): %s", jerr, body)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" && r.Data.ResultType != "matrix" {
		return 1, nil // scalar or string
	}
	return len(r.Data.Result), nil
}

// TestDashboardQueriesAgainstPrometheus: every query of the shipped
// Grafana dashboard (contrib/grafana/podsup.json), and of its variables,
// runs without error against a real Prometheus that scrapes podsup's
// metrics_listen, and gives data where the dashboard's groups make it
// exist. Only "Waiting" and "Back-off in force" may be empty: they have
// data only while a process waits, which a crash-looping process does
// only between its starts.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the dashboard's CPU, throttling and tasks panels have data only with podsup's cgroups, which need root (CI runs as root)")
	}
	server := needTool(t, "prometheus")
	metrics := freeLoopbackPort(t)
	f := startUp(t, strings.Replace(dashboardConfig, "METRICS", metrics, 1))
	f.waitRunning(t, "plain", "idle")

	dir := t.TempDir()
	web := freeLoopbackPort(t)
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: podsup
    static_configs:
      - targets: ['%s']
`, metrics)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, &proc.Cmd{Path: server, Args: []string{"prometheus",
		"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + web, "--log.level=warn"}, RunAs: proc.RunAs{Dir: dir}})
	go func() { _, _ = io.Copy(io.Discard, p.out) }() // its log must not fill the pipe
	base := "http://" + web

	// Data enough for a rate: a few scrapes of every group after the
	// crash-looping one restarted at least once.
	if !eventually(func() bool {
		n, err := promQuery(t, base, `count_over_time(up{job="podsup"}[1m]) >= 4 and on() (max(podsup_process_restarts_total{group="flap"}) >= 1) and on() (max(podsup_cpu_cfs_throttled_periods_total) > 0)`)
		return err == nil && n > 0
	}) {
		n, err := promQuery(t, base, `up`)
		t.Fatalf("Prometheus on %s never had 4 scrapes of podsup on %s with a restart and a throttled period (up: %d series, %v)", web, metrics, n, err)
	}

	dash, err := os.ReadFile("../../contrib/grafana/podsup.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dash, &d); err != nil {
		t.Fatalf("contrib/grafana/podsup.json: %v", err)
	}
	// Grafana's variables: "All" of a regex-matched variable.
	vars := strings.NewReplacer("$instance", ".*", "$group", ".*", "${instance}", ".*", "${group}", ".*")
	mayBeEmpty := map[string]bool{"Waiting (CrashLoopBackOff and others)": true, "Back-off in force": true}
	queries := 0
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		// label_values(METRIC, LABEL) is Grafana's: the series of METRIC.
		q := strings.TrimSuffix(strings.TrimPrefix(v.Query, "label_values("), ")")
		if i := strings.LastIndex(q, ","); i > 0 {
			q = q[:i]
		}
		queries++
		if n, err := promQuery(t, base, vars.Replace(q)); err != nil || n == 0 {
			t.Errorf("variable %s (%s): %d series, %v", v.Name, v.Query, n, err)
		}
	}
	for _, panel := range d.Panels {
		for _, target := range panel.Targets {
			queries++
			expr := vars.Replace(target.Expr)
			n, err := promQuery(t, base, expr)
			switch {
			case err != nil:
				t.Errorf("panel %q: %s: %v", panel.Title, target.Expr, err)
			case n == 0 && !mayBeEmpty[panel.Title]:
				t.Errorf("panel %q: %s: no data, where podsup's groups make some", panel.Title, target.Expr)
			}
		}
	}
	if queries < 10 {
		t.Fatalf("only %d queries found in the dashboard: the test checks nothing", queries)
	}
}
