package apiserver

import (
	"context"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Metrics in Prometheus's text format (GET /metrics). Everything is read
// when a scrape asks: the supervisor's status and each running process's
// cgroup files. Only the event counters are kept between scrapes, counted
// as events are published, so an unscraped podsup does no work for its
// metrics. docs/metrics.md lists the families and their sources.

var (
	processLabels = []string{"group", "process"}

	descRestarts = prometheus.NewDesc("podsup_process_restarts_total",
		"Times the process was restarted (kube_pod_container_status_restarts_total).", processLabels, nil)
	descReady = prometheus.NewDesc("podsup_process_ready",
		"1 when the process is ready (kube_pod_container_status_ready); main processes and sidecars, not init processes that run to completion (podsup_init_process_ready).", processLabels, nil)
	descInitReady = prometheus.NewDesc("podsup_init_process_ready",
		"1 when an init process that runs to completion has completed successfully (kube_pod_init_container_status_ready).", processLabels, nil)
	descLastTerminatedTime = prometheus.NewDesc("podsup_process_last_terminated_timestamp_seconds",
		"When the last instance that ended finished, in Unix seconds (kube_pod_container_status_last_terminated_timestamp).", processLabels, nil)
	descGroupReady = prometheus.NewDesc("podsup_group_ready",
		"1 when the group is ready: every wanted main process running and ready (kube_pod_status_ready{condition=\"true\"}).", []string{"group"}, nil)
	descGroupInitialized = prometheus.NewDesc("podsup_group_initialized",
		"1 when the group's Initialized condition is true, as describe shows it (kube_pod_status_initialized_time, a condition).", []string{"group"}, nil)
	descGroupPhase = prometheus.NewDesc("podsup_group_phase",
		"1 for the group's phase: Pending, Running, Succeeded, Failed, Stopping or Stopped (kube_pod_status_phase).", []string{"group", "phase"}, nil)
	descState = prometheus.NewDesc("podsup_process_state",
		"1 for the state the process is in: running, waiting or terminated (kube_pod_container_status_running/waiting/terminated).",
		append(processLabels, "state"), nil)
	descWaitingReason = prometheus.NewDesc("podsup_process_waiting_reason",
		"1 for why a waiting process waits, e.g. CrashLoopBackOff (kube_pod_container_status_waiting_reason).",
		append(processLabels, "reason"), nil)
	descLastTerminatedReason = prometheus.NewDesc("podsup_process_last_terminated_reason",
		"1 for how the last instance ended, e.g. Error, OOMKilled, Completed (kube_pod_container_status_last_terminated_reason).",
		append(processLabels, "reason"), nil)
	descLastExitCode = prometheus.NewDesc("podsup_process_last_exit_code",
		"The exit code of the last instance that ended (kube_pod_container_status_last_terminated_exitcode).", processLabels, nil)
	descStartTime = prometheus.NewDesc("podsup_process_start_time_seconds",
		"When the running instance started, in Unix seconds (kube_pod_container_state_started).", processLabels, nil)
	descBackoff = prometheus.NewDesc("podsup_process_backoff_seconds",
		"The back-off delay in force while the process waits in CrashLoopBackOff, 0 otherwise.", processLabels, nil)

	descCPU = prometheus.NewDesc("podsup_cpu_usage_seconds_total",
		"CPU time used by the process's cgroup (container_cpu_usage_seconds_total).", processLabels, nil)
	descWorkingSet = prometheus.NewDesc("podsup_memory_working_set_bytes",
		"Memory in use less inactive file pages, as cAdvisor computes it (container_memory_working_set_bytes).", processLabels, nil)
	descMemLimit = prometheus.NewDesc("podsup_memory_limit_bytes",
		"The memory limit in force on the process's cgroup, 0 for none (container_spec_memory_limit_bytes).", processLabels, nil)
	descOOM = prometheus.NewDesc("podsup_oom_events_total",
		"Instances of the process the kernel's OOM killer ended (container_oom_events_total).", processLabels, nil)
	descPids = prometheus.NewDesc("podsup_pids",
		"Tasks in the process's cgroup (container_processes).", processLabels, nil)
	descPidsLimit = prometheus.NewDesc("podsup_pids_limit",
		"The lowest pids limit on the process's cgroup or its group's, 0 for none (pids.max; cAdvisor exports none).", processLabels, nil)
	descCPULimit = prometheus.NewDesc("podsup_cpu_limit_cores",
		"The CPU quota in force on the process's cgroup or its group's, in cores, 0 for none (container_spec_cpu_quota / container_spec_cpu_period).", processLabels, nil)
	descCPUPeriods = prometheus.NewDesc("podsup_cpu_cfs_periods_total",
		"Enforcement periods that elapsed in the cgroup whose CPU quota applies (container_cpu_cfs_periods_total).", processLabels, nil)
	descCPUThrottledPeriods = prometheus.NewDesc("podsup_cpu_cfs_throttled_periods_total",
		"Periods in which the cgroup whose CPU quota applies was throttled (container_cpu_cfs_throttled_periods_total).", processLabels, nil)
	descCPUThrottledSeconds = prometheus.NewDesc("podsup_cpu_cfs_throttled_seconds_total",
		"Time the cgroup whose CPU quota applies spent throttled (container_cpu_cfs_throttled_seconds_total).", processLabels, nil)

	descProbeTotal = prometheus.NewDesc("podsup_probe_total",
		"Probes that ran, by probe_type (Startup, Liveness, Readiness) and result (successful, failed, unknown) (kubelet's prober_probe_total).",
		append(processLabels, "probe_type", "result"), nil)
	descProbeDuration = prometheus.NewDesc("podsup_probe_duration_seconds",
		"How long probes took, by probe_type (kubelet's prober_probe_duration_seconds).",
		append(processLabels, "probe_type"), nil)

	descBuildInfo = prometheus.NewDesc("podsup_build_info",
		"1, labelled with podsup's version, VCS revision and Go version (kube-state-metrics' build_info).",
		[]string{"version", "revision", "goversion"}, nil)
	descReloadOK = prometheus.NewDesc("podsup_config_last_reload_successful",
		"1 when the last load of the configuration (start-up or reload) succeeded, 0 when it was refused (prometheus_config_last_reload_successful).", nil, nil)
	descReloadTime = prometheus.NewDesc("podsup_config_last_reload_successful_timestamp_seconds",
		"When the configuration was last loaded successfully, in Unix seconds (prometheus_config_last_reload_success_timestamp_seconds).", nil, nil)
)

// probeTypes are the probe_type label values, as kubelet spells them.
var probeTypes = map[string]string{"startup": "Startup", "liveness": "Liveness", "readiness": "Readiness"}

// groupPhases are every phase a group can be in, for the one-hot
// podsup_group_phase.
var groupPhases = []lifecycle.GroupPhase{lifecycle.PhasePending, lifecycle.PhaseRunning,
	lifecycle.PhaseSucceeded, lifecycle.PhaseFailed, lifecycle.PhaseStopping, lifecycle.PhaseStopped}

// collector reads the supervisor's status and the cgroups on each scrape.
type collector struct {
	sup *supervisor.Supervisor
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRestarts, descReady, descInitReady, descState, descWaitingReason,
		descLastTerminatedReason, descLastExitCode, descLastTerminatedTime, descStartTime, descBackoff,
		descGroupReady, descGroupInitialized, descGroupPhase,
		descCPU, descWorkingSet, descMemLimit, descOOM, descPids, descPidsLimit,
		descCPULimit, descCPUPeriods, descCPUThrottledPeriods, descCPUThrottledSeconds,
		descProbeTotal, descProbeDuration} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, g := range c.sup.Status().Groups {
		gauge(descGroupReady, b2f(g.Ready), g.Name)
		gauge(descGroupInitialized, b2f(initialized(toGroup(g))), g.Name)
		for _, ph := range groupPhases {
			gauge(descGroupPhase, b2f(g.Phase == ph), g.Name, string(ph))
		}
		for _, p := range append(append([]lifecycle.ProcessStatus(nil), g.Init...), g.Processes...) {
			l := []string{g.Name, p.Name}
			counter(descRestarts, float64(p.RestartCount), l...)
			if p.Init && !p.Sidecar {
				// An init that runs to completion is never "ready" in
				// the sense of serving: kubelet reports it ready once it
				// completed (exit 0) and kube-state-metrics keeps it in a
				// family of its own, so that min by (group) of
				// podsup_process_ready is the group's readiness.
				gauge(descInitReady, b2f(initCompleted(p)), l...)
			} else {
				gauge(descReady, b2f(p.Ready), l...)
			}
			for _, s := range []lifecycle.State{lifecycle.StateRunning, lifecycle.StateWaiting, lifecycle.StateTerminated} {
				gauge(descState, b2f(p.State == s), append(l, string(s))...)
			}
			if p.State == lifecycle.StateWaiting && p.Reason != "" {
				gauge(descWaitingReason, 1, append(l, p.Reason)...)
			}
			last := p.LastTermination
			if last == nil {
				last = p.Terminated
			}
			if last != nil {
				if last.Reason != "" {
					gauge(descLastTerminatedReason, 1, append(l, last.Reason)...)
				}
				gauge(descLastExitCode, float64(last.ExitCode), l...)
				if !last.FinishedAt.IsZero() {
					gauge(descLastTerminatedTime, float64(last.FinishedAt.UnixNano())/1e9, l...)
				}
			}
			if p.State == lifecycle.StateRunning && !p.StartedAt.IsZero() {
				gauge(descStartTime, float64(p.StartedAt.UnixNano())/1e9, l...)
			}
			backoff := 0.0
			if p.State == lifecycle.StateWaiting && !p.NextStartAt.IsZero() && p.LastTermination != nil {
				if d := p.NextStartAt.Sub(p.LastTermination.FinishedAt); d > 0 {
					backoff = d.Seconds()
				}
			}
			gauge(descBackoff, backoff, l...)
			counter(descOOM, float64(p.OOMKills), l...)
			if p.State == lifecycle.StateRunning && p.Pid > 0 {
				c.collectCgroup(ch, p.Pid, l)
			}
		}
	}
	c.collectProbes(ch)
}

// initCompleted: an init process that runs to completion ended with exit
// code 0, which kubelet reports as ready.
func initCompleted(p lifecycle.ProcessStatus) bool {
	return p.State == lifecycle.StateTerminated && p.Terminated != nil && p.Terminated.ExitCode == 0
}

// collectProbes adds the probe counts and durations.
func (c collector) collectProbes(ch chan<- prometheus.Metric) {
	for _, st := range c.sup.ProbeStats() {
		kind := probeTypes[string(st.Kind)]
		if kind == "" {
			kind = string(st.Kind)
		}
		for _, r := range []string{supervisor.ProbeResultSuccessful, supervisor.ProbeResultFailed, supervisor.ProbeResultUnknown} {
			ch <- prometheus.MustNewConstMetric(descProbeTotal, prometheus.CounterValue, float64(st.Results[r]),
				st.Group, st.Process, kind, r)
		}
		buckets := make(map[float64]uint64, len(st.Buckets))
		for i, b := range supervisor.ProbeDurationBuckets {
			buckets[b] = st.Buckets[i]
		}
		ch <- prometheus.MustNewConstHistogram(descProbeDuration, st.Count, st.Sum, buckets, st.Group, st.Process, kind)
	}
}

// collectCgroup adds the cgroup figures of a running process's cgroup.
func (c collector) collectCgroup(ch chan<- prometheus.Metric, pid int, l []string) {
	d, ok := processCgroup(pid)
	if !ok || !d.podsupOwned() {
		return // a process in podsup's own cgroup: its figures would be podsup's
	}
	u := d.usage()
	if u == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, u.CPUSeconds, l...)
	if t, ok := d.cpuThrottling(); ok {
		ch <- prometheus.MustNewConstMetric(descCPULimit, prometheus.GaugeValue, t.limitCores, l...)
		ch <- prometheus.MustNewConstMetric(descCPUPeriods, prometheus.CounterValue, float64(t.Periods), l...)
		ch <- prometheus.MustNewConstMetric(descCPUThrottledPeriods, prometheus.CounterValue, float64(t.Throttled), l...)
		ch <- prometheus.MustNewConstMetric(descCPUThrottledSeconds, prometheus.CounterValue, t.ThrottledTime.Seconds(), l...)
	}
	if dir := d.dirFor("memory", "memory.current"); dir.Path == "" {
		// No memory cgroup of podsup's (a group without a memory limit
		// on a cgroup v1 or hybrid host): the tree's resident memory,
		// summed over the processes of its cgroup, stands in for the
		// working set; there is no limit to report.
		if rss, ok := d.treeRSS(); ok {
			ch <- prometheus.MustNewConstMetric(descWorkingSet, prometheus.GaugeValue, float64(rss), l...)
			ch <- prometheus.MustNewConstMetric(descMemLimit, prometheus.GaugeValue, 0, l...)
		}
	} else {
		ws := u.MemoryBytes
		if in, err := dir.InactiveFile(); err == nil && in < ws {
			ws -= in
		}
		ch <- prometheus.MustNewConstMetric(descWorkingSet, prometheus.GaugeValue, float64(ws), l...)
		ch <- prometheus.MustNewConstMetric(descMemLimit, prometheus.GaugeValue, float64(u.MemoryLimitBytes), l...)
	}
	if u.Pids > 0 {
		ch <- prometheus.MustNewConstMetric(descPids, prometheus.GaugeValue, float64(u.Pids), l...)
		ch <- prometheus.MustNewConstMetric(descPidsLimit, prometheus.GaugeValue, float64(u.PidsLimit), l...)
	}
}

// podsupInfo is podsup's own figures: its build and its configuration's
// last load.
type podsupInfo struct {
	version, revision string
	lastReload        func() (bool, time.Time)
}

func (i podsupInfo) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBuildInfo
	if i.lastReload != nil {
		ch <- descReloadOK
		ch <- descReloadTime
	}
}

func (i podsupInfo) Collect(ch chan<- prometheus.Metric) {
	revision, goversion := buildRevision()
	if i.revision != "" {
		revision = i.revision
	}
	version := i.version
	if version == "" {
		version = "unknown"
	}
	ch <- prometheus.MustNewConstMetric(descBuildInfo, prometheus.GaugeValue, 1, version, revision, goversion)
	if i.lastReload != nil {
		ok, at := i.lastReload()
		ch <- prometheus.MustNewConstMetric(descReloadOK, prometheus.GaugeValue, b2f(ok))
		ts := 0.0
		if !at.IsZero() {
			ts = float64(at.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(descReloadTime, prometheus.GaugeValue, ts)
	}
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
	vec  *prometheus.CounterVec
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
				e.vec.WithLabelValues(string(ev.Type), ev.Reason).Inc()
			}
		}()
	})
}

// metricsHandler is GET /metrics: podsup's families, the events counted
// since it started, and the process and Go runtime collectors.
func metricsHandler(ctx context.Context, b Backend) http.Handler {
	sup := b.Supervisor
	reg := prometheus.NewRegistry()
	events := &eventCounter{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podsup_events_total",
		Help: "Events podsup published, by type (Normal, Warning) and reason, since it started.",
	}, []string{"type", "reason"})}
	reg.MustRegister(events.vec, podsupInfo{version: b.Version, revision: b.Revision, lastReload: b.LastReload},
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector())
	if sup != nil { // a server without a supervisor (tests of the HTTP layer) has only podsup's own figures
		reg.MustRegister(collector{sup: sup})
		events.start(ctx, sup)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
