package apiserver

import (
	"bufio"
	"cmp"
	"context"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Metrics in Prometheus's text format (GET /metrics). Everything is read
// when a scrape asks: the supervisor's status and each running process's
// cgroup files. Only the event counters are kept between scrapes, counted
// as events are published, so an unscraped podsup does no work for its
// metrics. docs/metrics.md lists the families and their sources.
//
// A scrape reads the status once into one row per process, sorted by
// group and process, then writes each family from the rows: families in
// the order of their names and samples in the order of their label values,
// as client libraries sort them, so the output is stable.

// familyWriter is a family and how a scrape writes its samples.
type familyWriter struct {
	family
	write func(*expoWriter, *scrape)
}

// statusSource is what the metrics read of the supervisor.
type statusSource interface {
	Status() supervisor.Status
	ProbeStats() []supervisor.ProbeStat
}

// scrape is what one scrape read.
type scrape struct {
	groups []lifecycle.GroupStatus // sorted by name
	rows   []processRow            // sorted by group and process
	probes []supervisor.ProbeStat  // sorted by group, probe_type and process
	events []eventCount            // sorted by reason and type
	info   podsupInfo

	rt      *runtimeFigures
	selfFig *selfFigures
}

func (s *scrape) runtime() *runtimeFigures {
	if s.rt == nil {
		s.rt = readRuntime()
	}
	return s.rt
}

func (s *scrape) self() *selfFigures {
	if s.selfFig == nil {
		f := readOwnProcess()
		s.selfFig = &f
	}
	return s.selfFig
}

// processRow is one process's figures.
type processRow struct {
	group string
	p     *lifecycle.ProcessStatus
	cg    cgroupFigures
}

// cgroupFigures is what a running process's cgroup says, where podsup made
// it.
type cgroupFigures struct {
	ok         bool // the cgroup families exist for the process
	cpuSeconds float64
	throttle   throttling
	throttleOK bool
	workingSet float64
	memLimit   float64
	memOK      bool
	pids       float64
	pidsLimit  float64
	pidsOK     bool
}

// readScrape reads the supervisor (nil: a server without one) for a scrape.
func readScrape(src statusSource, events *eventCounter, info podsupInfo) *scrape {
	s := &scrape{info: info, events: events.counts()}
	if src == nil {
		return s
	}
	s.groups = src.Status().Groups
	slices.SortFunc(s.groups, func(a, b lifecycle.GroupStatus) int { return cmp.Compare(a.Name, b.Name) })
	n := 0
	for _, g := range s.groups {
		n += len(g.Init) + len(g.Processes)
	}
	s.rows = make([]processRow, 0, n)
	for gi := range s.groups {
		g := &s.groups[gi]
		for _, list := range [][]lifecycle.ProcessStatus{g.Init, g.Processes} {
			for pi := range list {
				p := &list[pi]
				row := processRow{group: g.Name, p: p}
				if p.State == lifecycle.StateRunning && p.Pid > 0 {
					row.cg = readCgroupFigures(p.Pid)
				}
				s.rows = append(s.rows, row)
			}
		}
	}
	slices.SortStableFunc(s.rows, func(a, b processRow) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.p.Name, b.p.Name))
	})
	s.probes = src.ProbeStats()
	slices.SortFunc(s.probes, func(a, b supervisor.ProbeStat) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(probeType(a.Kind), probeType(b.Kind)), cmp.Compare(a.Process, b.Process))
	})
	return s
}

// readCgroupFigures reads the cgroup figures of a running process's cgroup.
func readCgroupFigures(pid int) cgroupFigures {
	var f cgroupFigures
	d, ok := processCgroup(pid)
	if !ok || !d.podsupOwned() {
		return f // a process in podsup's own cgroup: its figures would be podsup's
	}
	u := d.usage()
	if u == nil {
		return f
	}
	f.ok = true
	f.cpuSeconds = u.CPUSeconds
	f.throttle, f.throttleOK = d.cpuThrottling()
	if dir := d.dirFor("memory", "memory.current"); dir.Path == "" {
		// No memory cgroup of podsup's (a group without a memory limit
		// on a cgroup v1 or hybrid host): the tree's resident memory,
		// summed over the processes of its cgroup, stands in for the
		// working set; there is no limit to report.
		if rss, ok := d.treeRSS(); ok {
			f.workingSet, f.memLimit, f.memOK = float64(rss), 0, true
		}
	} else {
		ws := u.MemoryBytes
		if in, err := dir.InactiveFile(); err == nil && in < ws {
			ws -= in
		}
		f.workingSet, f.memLimit, f.memOK = float64(ws), float64(u.MemoryLimitBytes), true
	}
	if u.Pids > 0 {
		f.pids, f.pidsLimit, f.pidsOK = float64(u.Pids), float64(u.PidsLimit), true
	}
	return f
}

// probeTypes are the probe_type label values, as kubelet spells them.
var probeTypes = map[string]string{"startup": "Startup", "liveness": "Liveness", "readiness": "Readiness"}

func probeType[K ~string](kind K) string {
	if t := probeTypes[string(kind)]; t != "" {
		return t
	}
	return string(kind)
}

// groupPhases are every phase a group can be in, for the one-hot
// podsup_group_phase, in the order of their names.
var groupPhases = []lifecycle.GroupPhase{lifecycle.PhaseFailed, lifecycle.PhasePending, lifecycle.PhaseRunning,
	lifecycle.PhaseStopped, lifecycle.PhaseStopping, lifecycle.PhaseSucceeded}

// processStates are the one-hot podsup_process_state's states, in the
// order of their names.
var processStates = []lifecycle.State{lifecycle.StateRunning, lifecycle.StateTerminated, lifecycle.StateWaiting}

// probeResults are podsup_probe_total's results, in the order of their
// names.
var probeResults = []string{supervisor.ProbeResultFailed, supervisor.ProbeResultSuccessful, supervisor.ProbeResultUnknown}

// probeBucketBounds are the le labels of podsup_probe_duration_seconds.
var probeBucketBounds = func() []string {
	out := make([]string, len(supervisor.ProbeDurationBuckets))
	for i, b := range supervisor.ProbeDurationBuckets {
		out[i] = string(appendFloat(nil, b))
	}
	return out
}()

// processFamily is a family with a sample for each process that get
// gives one to.
func processFamily(name string, typ metricType, help string, get func(*processRow) (float64, bool)) familyWriter {
	return familyWriter{family{name, help, typ}, func(e *expoWriter, s *scrape) {
		for i := range s.rows {
			r := &s.rows[i]
			if v, ok := get(r); ok {
				e.sample("")
				e.label("group", r.group)
				e.label("process", r.p.Name)
				e.value(v)
			}
		}
	}}
}

// processReason is a family whose one sample per process is labelled with
// a reason, 1.
func processReason(name, help string, get func(*lifecycle.ProcessStatus) string) familyWriter {
	return familyWriter{family{name, help, gaugeType}, func(e *expoWriter, s *scrape) {
		for i := range s.rows {
			r := &s.rows[i]
			if reason := get(r.p); reason != "" {
				e.sample("")
				e.label("group", r.group)
				e.label("process", r.p.Name)
				e.label("reason", reason)
				e.value(1)
			}
		}
	}}
}

// groupFamily is a family with a sample for each group.
func groupFamily(name, help string, get func(*lifecycle.GroupStatus) float64) familyWriter {
	return familyWriter{family{name, help, gaugeType}, func(e *expoWriter, s *scrape) {
		for i := range s.groups {
			e.sample("")
			e.label("group", s.groups[i].Name)
			e.value(get(&s.groups[i]))
		}
	}}
}

// lastTermination is the end of a process's last instance that ended.
func lastTermination(p *lifecycle.ProcessStatus) *lifecycle.Termination {
	if p.LastTermination != nil {
		return p.LastTermination
	}
	return p.Terminated
}

// cgroupFamily is a family of the cgroup figures, for running processes
// in a cgroup of podsup's.
func cgroupFamily(name string, typ metricType, help string, get func(*cgroupFigures) (float64, bool)) familyWriter {
	return processFamily(name, typ, help, func(r *processRow) (float64, bool) {
		if !r.cg.ok {
			return 0, false
		}
		return get(&r.cg)
	})
}

// podsupFamilies are podsup's own families.
var podsupFamilies = []familyWriter{
	processFamily("podsup_process_restarts_total", counterType,
		"Times the process was restarted (kube_pod_container_status_restarts_total).",
		func(r *processRow) (float64, bool) { return float64(r.p.RestartCount), true }),
	processFamily("podsup_process_ready", gaugeType,
		"1 when the process is ready (kube_pod_container_status_ready); main processes and sidecars, not init processes that run to completion (podsup_init_process_ready).",
		func(r *processRow) (float64, bool) {
			// An init that runs to completion is never "ready" in the
			// sense of serving: kubelet reports it ready once it
			// completed (exit 0) and kube-state-metrics keeps it in a
			// family of its own, so that min by (group) of
			// podsup_process_ready is the group's readiness.
			return b2f(r.p.Ready), !runsToCompletion(r.p)
		}),
	processFamily("podsup_init_process_ready", gaugeType,
		"1 when an init process that runs to completion has completed successfully (kube_pod_init_container_status_ready).",
		func(r *processRow) (float64, bool) { return b2f(initCompleted(r.p)), runsToCompletion(r.p) }),
	processFamily("podsup_process_last_terminated_timestamp_seconds", gaugeType,
		"When the last instance that ended finished, in Unix seconds (kube_pod_container_status_last_terminated_timestamp).",
		func(r *processRow) (float64, bool) {
			last := lastTermination(r.p)
			if last == nil || last.FinishedAt.IsZero() {
				return 0, false
			}
			return float64(last.FinishedAt.UnixNano()) / 1e9, true
		}),
	groupFamily("podsup_group_ready",
		"1 when the group is ready: every wanted main process running and ready (kube_pod_status_ready{condition=\"true\"}).",
		func(g *lifecycle.GroupStatus) float64 { return b2f(g.Ready) }),
	groupFamily("podsup_group_initialized",
		"1 when the group's Initialized condition is true, as describe shows it (kube_pod_status_initialized_time, a condition).",
		func(g *lifecycle.GroupStatus) float64 { return b2f(initialized(g)) }),
	{family{"podsup_group_phase",
		"1 for the group's phase: Pending, Running, Succeeded, Failed, Stopping or Stopped (kube_pod_status_phase).", gaugeType},
		func(e *expoWriter, s *scrape) {
			for i := range s.groups {
				g := &s.groups[i]
				for _, ph := range groupPhases {
					e.sample("")
					e.label("group", g.Name)
					e.label("phase", string(ph))
					e.value(b2f(g.Phase == ph))
				}
			}
		}},
	{family{"podsup_process_state",
		"1 for the state the process is in: running, waiting or terminated (kube_pod_container_status_running/waiting/terminated).", gaugeType},
		func(e *expoWriter, s *scrape) {
			for i := range s.rows {
				r := &s.rows[i]
				for _, st := range processStates {
					e.sample("")
					e.label("group", r.group)
					e.label("process", r.p.Name)
					e.label("state", string(st))
					e.value(b2f(r.p.State == st))
				}
			}
		}},
	processReason("podsup_process_waiting_reason",
		"1 for why a waiting process waits, e.g. CrashLoopBackOff (kube_pod_container_status_waiting_reason).",
		func(p *lifecycle.ProcessStatus) string {
			if p.State != lifecycle.StateWaiting {
				return ""
			}
			return p.Reason
		}),
	processReason("podsup_process_last_terminated_reason",
		"1 for how the last instance ended, e.g. Error, OOMKilled, Completed (kube_pod_container_status_last_terminated_reason).",
		func(p *lifecycle.ProcessStatus) string {
			if last := lastTermination(p); last != nil {
				return last.Reason
			}
			return ""
		}),
	processFamily("podsup_process_last_exit_code", gaugeType,
		"The exit code of the last instance that ended (kube_pod_container_status_last_terminated_exitcode).",
		func(r *processRow) (float64, bool) {
			if last := lastTermination(r.p); last != nil {
				return float64(last.ExitCode), true
			}
			return 0, false
		}),
	processFamily("podsup_process_start_time_seconds", gaugeType,
		"When the running instance started, in Unix seconds (kube_pod_container_state_started).",
		func(r *processRow) (float64, bool) {
			if r.p.State != lifecycle.StateRunning || r.p.StartedAt.IsZero() {
				return 0, false
			}
			return float64(r.p.StartedAt.UnixNano()) / 1e9, true
		}),
	processFamily("podsup_process_backoff_seconds", gaugeType,
		"The back-off delay in force while the process waits in CrashLoopBackOff, 0 otherwise.",
		func(r *processRow) (float64, bool) {
			p := r.p
			if p.State == lifecycle.StateWaiting && !p.NextStartAt.IsZero() && p.LastTermination != nil {
				if d := p.NextStartAt.Sub(p.LastTermination.FinishedAt); d > 0 {
					return d.Seconds(), true
				}
			}
			return 0, true
		}),
	processFamily("podsup_oom_events_total", counterType,
		"Instances of the process the kernel's OOM killer ended (container_oom_events_total).",
		func(r *processRow) (float64, bool) { return float64(r.p.OOMKills), true }),

	cgroupFamily("podsup_cpu_usage_seconds_total", counterType,
		"CPU time used by the process's cgroup (container_cpu_usage_seconds_total).",
		func(f *cgroupFigures) (float64, bool) { return f.cpuSeconds, true }),
	cgroupFamily("podsup_memory_working_set_bytes", gaugeType,
		"Memory in use less inactive file pages, as cAdvisor computes it (container_memory_working_set_bytes).",
		func(f *cgroupFigures) (float64, bool) { return f.workingSet, f.memOK }),
	cgroupFamily("podsup_memory_limit_bytes", gaugeType,
		"The memory limit in force on the process's cgroup, 0 for none (container_spec_memory_limit_bytes).",
		func(f *cgroupFigures) (float64, bool) { return f.memLimit, f.memOK }),
	cgroupFamily("podsup_pids", gaugeType,
		"Tasks in the process's cgroup (container_processes).",
		func(f *cgroupFigures) (float64, bool) { return f.pids, f.pidsOK }),
	cgroupFamily("podsup_pids_limit", gaugeType,
		"The lowest pids limit on the process's cgroup or its group's, 0 for none (pids.max; cAdvisor exports none).",
		func(f *cgroupFigures) (float64, bool) { return f.pidsLimit, f.pidsOK }),
	cgroupFamily("podsup_cpu_limit_cores", gaugeType,
		"The CPU quota in force on the process's cgroup or its group's, in cores, 0 for none (container_spec_cpu_quota / container_spec_cpu_period).",
		func(f *cgroupFigures) (float64, bool) { return f.throttle.limitCores, f.throttleOK }),
	cgroupFamily("podsup_cpu_cfs_periods_total", counterType,
		"Enforcement periods that elapsed in the cgroup whose CPU quota applies (container_cpu_cfs_periods_total).",
		func(f *cgroupFigures) (float64, bool) { return float64(f.throttle.Periods), f.throttleOK }),
	cgroupFamily("podsup_cpu_cfs_throttled_periods_total", counterType,
		"Periods in which the cgroup whose CPU quota applies was throttled (container_cpu_cfs_throttled_periods_total).",
		func(f *cgroupFigures) (float64, bool) { return float64(f.throttle.Throttled), f.throttleOK }),
	cgroupFamily("podsup_cpu_cfs_throttled_seconds_total", counterType,
		"Time the cgroup whose CPU quota applies spent throttled (container_cpu_cfs_throttled_seconds_total).",
		func(f *cgroupFigures) (float64, bool) { return f.throttle.ThrottledTime.Seconds(), f.throttleOK }),

	{family{"podsup_probe_total",
		"Probes that ran, by probe_type (Startup, Liveness, Readiness) and result (successful, failed, unknown) (kubelet's prober_probe_total).", counterType},
		func(e *expoWriter, s *scrape) {
			for i := range s.probes {
				st := &s.probes[i]
				for _, res := range probeResults {
					e.sample("")
					e.label("group", st.Group)
					e.label("probe_type", probeType(st.Kind))
					e.label("process", st.Process)
					e.label("result", res)
					e.value(float64(st.Results[res]))
				}
			}
		}},
	{family{"podsup_probe_duration_seconds",
		"How long probes took, by probe_type (kubelet's prober_probe_duration_seconds).", histogramType},
		func(e *expoWriter, s *scrape) {
			for i := range s.probes {
				st := &s.probes[i]
				labels := func() {
					e.label("group", st.Group)
					e.label("probe_type", probeType(st.Kind))
					e.label("process", st.Process)
				}
				for b, le := range probeBucketBounds {
					e.sample("_bucket")
					labels()
					e.label("le", le)
					var n uint64
					if b < len(st.Buckets) {
						n = st.Buckets[b]
					}
					e.count(n)
				}
				e.sample("_bucket")
				labels()
				e.label("le", "+Inf")
				e.count(st.Count)
				e.sample("_sum")
				labels()
				e.value(st.Sum)
				e.sample("_count")
				labels()
				e.count(st.Count)
			}
		}},

	{family{"podsup_events_total",
		"Events podsup published, by type (Normal, Warning) and reason, since it started.", counterType},
		func(e *expoWriter, s *scrape) {
			for _, c := range s.events {
				e.sample("")
				e.label("reason", c.reason)
				e.label("type", c.typ)
				e.value(float64(c.n))
			}
		}},
	{family{"podsup_build_info",
		"1, labelled with podsup's version, VCS revision and Go version (kube-state-metrics' build_info).", gaugeType},
		func(e *expoWriter, s *scrape) {
			revision, goversion := buildRevision()
			if s.info.revision != "" {
				revision = s.info.revision
			}
			version := s.info.version
			if version == "" {
				version = "unknown"
			}
			e.sample("")
			e.label("goversion", goversion)
			e.label("revision", revision)
			e.label("version", version)
			e.value(1)
		}},
	{family{"podsup_config_last_reload_successful",
		"1 when the last load of the configuration (start-up or reload) succeeded, 0 when it was refused (prometheus_config_last_reload_successful).", gaugeType},
		func(e *expoWriter, s *scrape) {
			if s.info.lastReload != nil {
				ok, _ := s.info.lastReload()
				e.sample("")
				e.value(b2f(ok))
			}
		}},
	{family{"podsup_config_last_reload_successful_timestamp_seconds",
		"When the configuration was last loaded successfully, in Unix seconds (prometheus_config_last_reload_success_timestamp_seconds).", gaugeType},
		func(e *expoWriter, s *scrape) {
			if s.info.lastReload != nil {
				_, at := s.info.lastReload()
				ts := 0.0
				if !at.IsZero() {
					ts = float64(at.UnixNano()) / 1e9
				}
				e.sample("")
				e.value(ts)
			}
		}},
}

// allFamilies is every family, in the order of their names.
var allFamilies = func() []familyWriter {
	all := slices.Concat(podsupFamilies, runtimeFamilies)
	slices.SortFunc(all, func(a, b familyWriter) int { return cmp.Compare(a.name, b.name) })
	return all
}()

// runsToCompletion: an init process that is not a sidecar.
func runsToCompletion(p *lifecycle.ProcessStatus) bool {
	return p.Init && !p.Sidecar
}

// initCompleted: an init process that runs to completion ended with exit
// code 0, which kubelet reports as ready.
func initCompleted(p *lifecycle.ProcessStatus) bool {
	return p.State == lifecycle.StateTerminated && p.Terminated != nil && p.Terminated.ExitCode == 0
}

// podsupInfo is podsup's own figures: its build and its configuration's
// last load.
type podsupInfo struct {
	version, revision string
	lastReload        func() (bool, time.Time)
}

// buildRevision is the VCS revision the binary was built from ("unknown"
// when go build recorded none) and the Go version that built it.
var buildRevision = sync.OnceValues(func() (string, string) {
	revision, goversion := "unknown", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.GoVersion != "" {
			goversion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	return revision, goversion
})

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// eventCounter counts published events by type and reason
// (podsup_events_total), on a goroutine that wakes once per event.
type eventCounter struct {
	once sync.Once
	mu   sync.Mutex
	n    map[eventKey]uint64
}

type eventKey struct{ reason, typ string }

// eventCount is one podsup_events_total sample.
type eventCount struct {
	eventKey
	n uint64
}

func (e *eventCounter) start(ctx context.Context, sup *supervisor.Supervisor) {
	e.once.Do(func() {
		sub := sup.Subscribe()
		go func() {
			defer sub.Close()
			for {
				ev, err := sub.Next(ctx)
				if err != nil {
					return
				}
				e.mu.Lock()
				if e.n == nil {
					e.n = map[eventKey]uint64{}
				}
				e.n[eventKey{reason: ev.Reason, typ: string(ev.Type)}]++
				e.mu.Unlock()
			}
		}()
	})
}

// counts is the counts so far, sorted by reason and type.
func (e *eventCounter) counts() []eventCount {
	e.mu.Lock()
	out := make([]eventCount, 0, len(e.n))
	for k, n := range e.n {
		out = append(out, eventCount{k, n})
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b eventCount) int {
		return cmp.Or(cmp.Compare(a.reason, b.reason), cmp.Compare(a.typ, b.typ))
	})
	return out
}

// metricsHandler is GET /metrics: podsup's families, the events counted
// since it started, and podsup's own process and Go runtime figures.
func metricsHandler(ctx context.Context, b Backend) http.Handler {
	events := &eventCounter{}
	info := podsupInfo{version: b.Version, revision: b.Revision, lastReload: b.LastReload}
	var src statusSource
	if b.Supervisor != nil { // a server without a supervisor (tests of the HTTP layer) has only podsup's own figures
		src = b.Supervisor
		events.start(ctx, b.Supervisor)
	}
	return exposition(func() *scrape { return readScrape(src, events, info) })
}

// exposition serves what read returns in the text format, version 0.0.4,
// whatever the scrape's Accept header asks for.
func exposition(read func() *scrape) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := read()
		w.Header().Set("Content-Type", expositionContentType)
		bw := bufio.NewWriterSize(w, 32<<10)
		e := &expoWriter{w: bw}
		for i := range allFamilies {
			f := &allFamilies[i]
			e.begin(&f.family)
			f.write(e, s)
		}
		_ = bw.Flush() // a scraper that went away: nothing to tell it
	})
}
