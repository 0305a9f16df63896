package apiserver

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// fakeStatus is a statusSource without a supervisor.
type fakeStatus struct {
	st     supervisor.Status
	probes []supervisor.ProbeStat
}

func (f fakeStatus) Status() supervisor.Status {
	return supervisor.Status{Groups: slices.Clone(f.st.Groups)}
}

func (f fakeStatus) ProbeStats() []supervisor.ProbeStat { return slices.Clone(f.probes) }

// scrapeOf serves one scrape of src with accept as the Accept header.
func scrapeOf(t testing.TB, src statusSource, accept string) (string, string) {
	h := exposition(func() *scrape {
		return readScrape(src, &eventCounter{}, podsupInfo{version: "v1", lastReload: func() (bool, time.Time) { return true, time.Unix(1, 0) }})
	})
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("GET /metrics: %d", w.Code)
	}
	return w.Body.String(), w.Header().Get("Content-Type")
}

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not valid exposition: %v\n%s", err, text)
	}
	return fams
}

func testSource() fakeStatus {
	now := time.Unix(1_800_000_000, 500_000_000)
	return fakeStatus{
		st: supervisor.Status{Groups: []lifecycle.GroupStatus{
			{Name: "web", Phase: lifecycle.PhaseRunning, Ready: true,
				Init: []lifecycle.ProcessStatus{
					{Name: "setup", Init: true, State: lifecycle.StateTerminated, Terminated: &lifecycle.Termination{ExitCode: 0, Reason: "Completed", FinishedAt: now}},
					{Name: "proxy", Init: true, Sidecar: true, State: lifecycle.StateRunning, Ready: true, Started: true, StartedAt: now},
				},
				Processes: []lifecycle.ProcessStatus{
					{Name: "api", State: lifecycle.StateRunning, Ready: true, StartedAt: now, RestartCount: 2},
				}},
			{Name: "batch", Phase: lifecycle.PhaseRunning,
				Processes: []lifecycle.ProcessStatus{
					{Name: "crash", State: lifecycle.StateWaiting, Reason: "CrashLoopBackOff", RestartCount: 3, OOMKills: 1,
						LastTermination: &lifecycle.Termination{ExitCode: 3, Reason: "Error \"quoted\"\\ and\nnewline", FinishedAt: now},
						NextStartAt:     now.Add(10 * time.Second)},
				}},
		}},
		probes: []supervisor.ProbeStat{
			{Group: "web", Process: "api", Kind: "readiness", Results: map[string]uint64{"successful": 4, "failed": 1}, Count: 5, Sum: 0.25,
				Buckets: []uint64{1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5}},
			{Group: "web", Process: "api", Kind: "liveness", Results: map[string]uint64{"unknown": 1}, Count: 1, Sum: 0.001,
				Buckets: []uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		},
	}
}

// TestMetricsExposition: the exposition parses strictly, families come in
// the order of their names and samples in the order of their labels, and
// the values are the status's.
func TestMetricsExposition(t *testing.T) {
	text, _ := scrapeOf(t, testSource(), "")
	fams := parse(t, text)
	var names []string
	var samples []string
	for line := range strings.Lines(text) {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("families not sorted: %v", names)
	}
	// Within a family, samples are sorted by their label values (but for
	// a histogram's le and a summary's _sum and _count, in the format's
	// order).
	fam := ""
	for line := range strings.Lines(text) {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if fam != "podsup_probe_duration_seconds" && fam != "go_gc_duration_seconds" && !slices.IsSorted(samples) {
				t.Errorf("samples of %s not sorted:\n%s", fam, strings.Join(samples, "\n"))
			}
			fam, samples = strings.Fields(name)[0], nil
			continue
		}
		if !strings.HasPrefix(line, "#") {
			samples = append(samples, strings.Fields(line)[0])
		}
	}
	for _, want := range []string{"podsup_process_restarts_total", "podsup_process_ready", "podsup_init_process_ready",
		"podsup_process_state", "podsup_process_waiting_reason", "podsup_process_last_terminated_reason",
		"podsup_process_last_exit_code", "podsup_process_last_terminated_timestamp_seconds", "podsup_process_start_time_seconds",
		"podsup_process_backoff_seconds", "podsup_oom_events_total", "podsup_group_ready", "podsup_group_initialized",
		"podsup_group_phase", "podsup_probe_total", "podsup_probe_duration_seconds", "podsup_build_info",
		"podsup_config_last_reload_successful", "podsup_config_last_reload_successful_timestamp_seconds",
		"go_goroutines", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes", "go_info", "go_threads",
		"process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds", "process_cpu_seconds_total"} {
		if fams[want] == nil {
			t.Errorf("no %s", want)
		}
	}
	if fams["podsup_events_total"] != nil {
		t.Error("podsup_events_total without events")
	}
	value := func(name string, labels ...string) (float64, bool) {
		f := fams[name]
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"podsup_process_restarts_total", []string{"group", "batch", "process", "crash"}, 3},
		{"podsup_process_last_terminated_reason", []string{"group", "batch", "reason", "Error \"quoted\"\\ and\nnewline"}, 1},
		{"podsup_process_waiting_reason", []string{"process", "crash", "reason", "CrashLoopBackOff"}, 1},
		{"podsup_process_backoff_seconds", []string{"process", "crash"}, 10},
		{"podsup_process_last_exit_code", []string{"process", "crash"}, 3},
		{"podsup_oom_events_total", []string{"process", "crash"}, 1},
		{"podsup_process_state", []string{"process", "crash", "state", "waiting"}, 1},
		{"podsup_process_state", []string{"process", "api", "state", "running"}, 1},
		{"podsup_process_ready", []string{"process", "proxy"}, 1},
		{"podsup_init_process_ready", []string{"process", "setup"}, 1},
		{"podsup_process_start_time_seconds", []string{"process", "api"}, 1_800_000_000.5},
		{"podsup_group_phase", []string{"group", "web", "phase", "Running"}, 1},
		{"podsup_group_phase", []string{"group", "web", "phase", "Failed"}, 0},
		{"podsup_group_ready", []string{"group", "web"}, 1},
		{"podsup_group_initialized", []string{"group", "web"}, 1},
		{"podsup_probe_total", []string{"probe_type", "Readiness", "result", "failed"}, 1},
		{"podsup_probe_total", []string{"probe_type", "Liveness", "result", "unknown"}, 1},
		{"podsup_probe_duration_seconds", []string{"probe_type", "Readiness"}, 5},
		{"podsup_config_last_reload_successful_timestamp_seconds", nil, 1},
		{"podsup_build_info", []string{"version", "v1"}, 1},
	} {
		if v, ok := value(c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (%v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if _, ok := value("podsup_process_ready", "process", "setup"); ok {
		t.Error("the init setup, which runs to completion, is in podsup_process_ready")
	}
	h := fams["podsup_probe_duration_seconds"].GetMetric()[0].GetHistogram() // Liveness, the first
	if len(h.GetBucket()) != len(supervisor.ProbeDurationBuckets)+1 || h.GetBucket()[0].GetUpperBound() != 0.005 || h.GetSampleSum() != 0.001 {
		t.Errorf("histogram %v", h)
	}
}

// TestMetricsContentType: text format 0.0.4 whatever the scrape asks for.
func TestMetricsContentType(t *testing.T) {
	for _, accept := range []string{"", "*/*", "text/plain",
		"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3"} {
		text, ct := scrapeOf(t, testSource(), accept)
		if ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("Accept %q: Content-Type %q", accept, ct)
		}
		if expfmt.ResponseFormat(map[string][]string{"Content-Type": {ct}}) != expfmt.NewFormat(expfmt.TypeTextPlain) {
			t.Errorf("Accept %q: %q is not what expfmt takes for the text format", accept, ct)
		}
		parse(t, text)
	}
}

// TestExpositionEscaping: label values and help text are escaped as the
// format asks and read back unchanged.
func TestExpositionEscaping(t *testing.T) {
	for _, s := range []string{"plain", `back\slash`, `"quoted"`, "new\nline", "all \\ \" \n of them\\", "ünïcode ✓", ""} {
		var b strings.Builder
		bw := bufio.NewWriter(&b)
		e := &expoWriter{w: bw}
		e.begin(&family{name: "x_total", help: "help " + s, typ: counterType})
		e.sample("")
		e.label("v", s)
		e.value(1)
		bw.Flush()
		fams := parse(t, b.String())
		f := fams["x_total"]
		if f.GetHelp() != "help "+s {
			t.Errorf("help %q read back as %q", "help "+s, f.GetHelp())
		}
		if got := f.GetMetric()[0].GetLabel()[0].GetValue(); got != s {
			t.Errorf("label %q read back as %q", s, got)
		}
	}
}

// benchSource is n processes, ten to a group, running, each with a
// readiness probe, not in a cgroup (so a scrape measures the exposition,
// not the cgroup files).
func benchSource(n int) fakeStatus {
	var f fakeStatus
	now := time.Now()
	for g := 0; g < n/10; g++ {
		gs := lifecycle.GroupStatus{Name: fmt.Sprintf("group-%03d", g), Phase: lifecycle.PhaseRunning, Ready: true}
		for p := 0; p < 10; p++ {
			ps := lifecycle.ProcessStatus{Name: fmt.Sprintf("proc-%d", p), State: lifecycle.StateRunning, Ready: true, StartedAt: now,
				RestartCount: p, LastTermination: &lifecycle.Termination{ExitCode: 1, Reason: "Error", FinishedAt: now}}
			gs.Processes = append(gs.Processes, ps)
			f.probes = append(f.probes, supervisor.ProbeStat{Group: gs.Name, Process: ps.Name, Kind: "readiness",
				Results: map[string]uint64{"successful": 5}, Count: 5, Sum: 0.01, Buckets: make([]uint64, len(supervisor.ProbeDurationBuckets))})
		}
		f.st.Groups = append(f.st.Groups, gs)
	}
	return f
}

// discard is a ResponseWriter that keeps nothing, so that a benchmark
// counts the server's work alone.
type discard struct {
	h http.Header
	n int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }

// BenchmarkMetricsScrape is one GET /metrics of 1000 processes.
func BenchmarkMetricsScrape(b *testing.B) {
	src := benchSource(1000)
	h := exposition(func() *scrape { return readScrape(src, &eventCounter{}, podsupInfo{version: "v1"}) })
	r := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := &discard{h: http.Header{}}
		h.ServeHTTP(w, r)
		if w.n == 0 {
			b.Fatal("empty")
		}
	}
}
