package apiserver

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podsup/podsup/supervisor"
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
		"1 when the process is ready (kube_pod_container_status_ready).", processLabels, nil)
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
)

// collector reads the supervisor's status and the cgroups on each scrape.
type collector struct {
	sup *supervisor.Supervisor
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRestarts, descReady, descState, descWaitingReason,
		descLastTerminatedReason, descLastExitCode, descStartTime, descBackoff,
		descCPU, descWorkingSet, descMemLimit, descOOM, descPids} {
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
		for _, p := range append(append([]supervisor.ProcessStatus(nil), g.Init...), g.Processes...) {
			l := []string{g.Name, p.Name}
			counter(descRestarts, float64(p.RestartCount), l...)
			gauge(descReady, b2f(p.Ready), l...)
			for _, s := range []supervisor.State{supervisor.StateRunning, supervisor.StateWaiting, supervisor.StateTerminated} {
				gauge(descState, b2f(p.State == s), append(l, string(s))...)
			}
			if p.State == supervisor.StateWaiting && p.Reason != "" {
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
			}
			if p.State == supervisor.StateRunning && !p.StartedAt.IsZero() {
				gauge(descStartTime, float64(p.StartedAt.UnixNano())/1e9, l...)
			}
			backoff := 0.0
			if p.State == supervisor.StateWaiting && !p.NextStartAt.IsZero() && p.LastTermination != nil {
				if d := p.NextStartAt.Sub(p.LastTermination.FinishedAt); d > 0 {
					backoff = d.Seconds()
				}
			}
			gauge(descBackoff, backoff, l...)
			counter(descOOM, float64(p.OOMKills), l...)
			if p.State == supervisor.StateRunning && p.Pid > 0 {
				c.collectCgroup(ch, p.Pid, l)
			}
		}
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
	if dir, v2 := d.dirFor("memory", "memory.current"); dir != "" {
		inactive := "total_inactive_file"
		if v2 {
			inactive = "inactive_file"
		}
		ws := u.MemoryBytes
		if in, ok := readKeyed(filepath.Join(dir, "memory.stat"), inactive); ok && in < ws {
			ws -= in
		}
		ch <- prometheus.MustNewConstMetric(descWorkingSet, prometheus.GaugeValue, float64(ws), l...)
		ch <- prometheus.MustNewConstMetric(descMemLimit, prometheus.GaugeValue, float64(u.MemoryLimitBytes), l...)
	}
	if u.Pids > 0 {
		ch <- prometheus.MustNewConstMetric(descPids, prometheus.GaugeValue, float64(u.Pids), l...)
	}
}

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
func metricsHandler(ctx context.Context, sup *supervisor.Supervisor) http.Handler {
	reg := prometheus.NewRegistry()
	events := &eventCounter{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podsup_events_total",
		Help: "Events podsup published, by type (Normal, Warning) and reason, since it started.",
	}, []string{"type", "reason"})}
	reg.MustRegister(events.vec,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector())
	if sup != nil { // a server without a supervisor (tests of the HTTP layer) has only podsup's own figures
		reg.MustRegister(collector{sup: sup})
		events.start(ctx, sup)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
