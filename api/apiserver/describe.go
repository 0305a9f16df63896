package apiserver

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// readCgroup finds a process's cgroup; tests replace it to describe
// processes whose pids are not theirs.
var readCgroup = processCgroup

// describeEvents bounds the events a description carries per object, like
// the tail of `kubectl describe`.
const describeEvents = 20

// describe answers GET /v1/describe/{group}[/{process}]: the server
// composes the status, the configuration in force, the cgroup files and the
// kept events, so that one request gives a consistent view and clients need
// not know where each part comes from.
func (s *Server) describe(w http.ResponseWriter, r *http.Request) {
	group, process := r.PathValue("group"), r.PathValue("process")
	gs, ok := s.b.Supervisor.Status().Group(group)
	if !ok {
		writeError(w, notFound("no group %q", group))
		return
	}
	cfg := s.b.Supervisor.Config()
	var gspec *spec.Group
	for i := range cfg.Groups {
		if cfg.Groups[i].Name == group {
			gspec = &cfg.Groups[i]
		}
	}
	evs, _ := s.b.History.Since(0)
	d := describeGroup(gs, gspec, cfg.Backoff, toEvents(evs), time.Now())
	if d.Sandbox != nil && s.b.Network != nil && process == "" {
		d.Sandbox.Network = s.b.Network(r.Context(), group)
	}
	if process != "" {
		if !keepProcess(&d, process) {
			writeError(w, notFound("group %q has no process %q", group, process))
			return
		}
	}
	writeJSON(w, http.StatusOK, api.DescribeResponse{Group: d})
}

// keepProcess narrows d to the named process (init or main) and drops the
// group's own events; false when there is no such process.
func keepProcess(d *api.GroupDescription, name string) bool {
	for _, list := range [][]api.ProcessDescription{d.Init, d.Processes} {
		for _, p := range list {
			if p.Name == name {
				d.Init, d.Processes, d.Events = nil, []api.ProcessDescription{p}, []api.Event{}
				return true
			}
		}
	}
	return false
}

func toEvents(evs []lifecycle.Event) []api.Event {
	out := make([]api.Event, len(evs))
	for i, e := range evs {
		out[i] = toEvent(e)
	}
	return out
}

// describeGroup builds a group's description. gspec is nil when the group
// left the configuration (a reload removed it and it is still stopping).
func describeGroup(gs lifecycle.GroupStatus, gspec *spec.Group, defBackoff spec.Backoff, evs []api.Event, now time.Time) api.GroupDescription {
	st := toGroup(gs)
	d := api.GroupDescription{Name: st.Name, Phase: st.Phase, Ready: st.Ready, ReadinessHeldBy: st.ReadinessHeldBy,
		Conditions: []api.Condition{{Type: "Initialized", Status: initialized(&gs)}, {Type: "Ready", Status: st.Ready}},
		Processes:  []api.ProcessDescription{}, Events: lastEvents(evs, st.Name, "", true)}
	if gspec != nil {
		d.RestartPolicy = string(gspec.EffectiveRestartPolicy(nil))
		d.DependsOn = describeDependencies(gspec.DependsOn)
		d.Grace = gspec.Grace().String()
		d.Backoff = backoffParams(gspec.EffectiveBackoff(defBackoff))
		d.Sandbox = describeSandbox(gspec.Sandbox)
	}
	for _, p := range st.Init {
		d.Init = append(d.Init, describeProcess(p, processSpec(gspec, p.Name, true), gspec, evs, st.Name, now))
	}
	for _, p := range st.Processes {
		d.Processes = append(d.Processes, describeProcess(p, processSpec(gspec, p.Name, false), gspec, evs, st.Name, now))
	}
	// The group's cgroup is the parent of its processes' own (each
	// process keeps a cgroup of its own below the group's).
	for _, p := range append(append([]api.ProcessStatus{}, st.Init...), st.Processes...) {
		if p.State != string(lifecycle.StateRunning) || p.Pid <= 0 {
			continue
		}
		if dir, ok := readCgroup(p.Pid); ok && dir.podsupOwned() {
			g := dir.parent()
			d.Cgroup, d.Usage = g.name(), g.usage()
			break
		}
	}
	return d
}

// initialized is a pod's Initialized condition, as kubelet computes it
// (pkg/kubelet/status/generate.go, GeneratePodInitializedCondition; rule
// S9 of docs/semantics.md): every init process that runs to completion
// completed, and every sidecar (an init that keeps running) has started;
// while a main process runs, the group is initialized whatever its
// sidecars do meanwhile (a sidecar restarting does not un-initialize it),
// and a group that Succeeded is (kubelet's PodCompleted). A group without
// init processes is initialized at once.
func initialized(g *lifecycle.GroupStatus) bool {
	if g.Phase == lifecycle.PhaseSucceeded {
		return true
	}
	for i := range g.Processes {
		if g.Processes[i].State == lifecycle.StateRunning {
			return true // kubelet: HasAnyRegularContainerStarted
		}
	}
	for i := range g.Init {
		p := &g.Init[i]
		if p.Sidecar {
			if p.State != lifecycle.StateRunning || !p.Started {
				return false
			}
			continue
		}
		if p.State != lifecycle.StateTerminated || p.Terminated == nil || p.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

func backoffParams(b spec.Backoff) *api.BackoffParams {
	if b == (spec.Backoff{}) {
		b = spec.DefaultBackoff() // all zero means kubelet's (supervisor.New)
	}
	return &api.BackoffParams{Initial: b.Initial.String(), Max: b.Max.String(), Reset: b.Reset.String()}
}

func describeSandbox(sb *spec.Sandbox) *api.SandboxDescription {
	if sb == nil {
		return nil
	}
	d := &api.SandboxDescription{Namespaces: sb.Namespaces, Hostname: sb.Hostname, Rootfs: sb.Rootfs}
	for _, m := range sb.Mounts {
		line := m.Type
		if m.Source != "" {
			line += " " + m.Source
		}
		line += " -> " + m.Target
		if m.ReadOnly {
			line += " (ro)"
		}
		d.Mounts = append(d.Mounts, line)
	}
	if r := sb.Resources; r != (spec.Resources{}) {
		d.Limits = &api.Limits{MemoryBytes: r.Memory, CPU: r.CPU, CPUWeight: r.CPUWeight, Pids: r.Pids}
	}
	if n := sb.Network; n != nil {
		d.NetworkMode = n.Mode
		for _, p := range n.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = "tcp"
			}
			line := fmt.Sprintf("%s %d/%s", p.Name, p.ContainerPort, proto)
			if p.HostPort != 0 {
				line += " <- " + net.JoinHostPort(p.HostIP, strconv.Itoa(p.HostPort))
			}
			d.Ports = append(d.Ports, line)
		}
	}
	return d
}

func processSpec(g *spec.Group, name string, init bool) *spec.Process {
	if g == nil {
		return nil
	}
	list := g.Processes
	if init {
		list = g.Init
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func describeProcess(st api.ProcessStatus, ps *spec.Process, g *spec.Group, evs []api.Event, group string, now time.Time) api.ProcessDescription {
	d := api.ProcessDescription{ProcessStatus: st, Events: lastEvents(evs, group, st.Name, false)}
	if ps != nil {
		d.Command, d.WorkingDir, d.User, d.Critical = ps.Command, ps.WorkingDir, ps.User, ps.Critical
		d.RestartPolicy = string(g.EffectiveRestartPolicy(ps))
		if r := ps.Resources; r != (spec.Resources{}) {
			d.Limits = &api.Limits{MemoryBytes: r.Memory, CPU: r.CPU, CPUWeight: r.CPUWeight, Pids: r.Pids}
		}
		d.DependsOn = describeDependencies(ps.DependsOn)
		for _, k := range []struct {
			kind  spec.ProbeKind
			probe *spec.Probe
		}{{spec.Startup, ps.StartupProbe}, {spec.Liveness, ps.LivenessProbe}, {spec.Readiness, ps.ReadinessProbe}} {
			if k.probe != nil {
				d.Probes = append(d.Probes, describeProbe(k.kind, *k.probe, st, d.Events, now))
			}
		}
		for _, h := range []struct {
			point spec.HookPoint
			hook  *spec.Hook
		}{{spec.PreStart, ps.PreStart}, {spec.PostStart, ps.PostStart}, {spec.PreStop, ps.PreStop}, {spec.PostStop, ps.PostStop}} {
			if h.hook != nil {
				hd := api.HookDescription{Point: string(h.point), Action: handlerAction(h.hook.Handler)}
				if h.hook.Timeout > 0 {
					hd.Timeout = h.hook.Timeout.String()
				}
				d.Hooks = append(d.Hooks, hd)
			}
		}
	}
	if ps != nil {
		pid := 0
		if st.State == string(lifecycle.StateRunning) {
			pid = st.Pid
		}
		d.Security = describeSecurity(pid, spec.EffectiveSecurity(g, ps), g.Sandbox) // ps is g's
	}
	if st.State == string(lifecycle.StateRunning) && st.Pid > 0 {
		if dir, ok := readCgroup(st.Pid); ok && dir.podsupOwned() {
			d.Cgroup, d.Usage = dir.name(), dir.usage()
		}
	}
	return d
}

// describeProbe gives a probe's parameters with D1's defaults and its last
// result. Only failures are events (Unhealthy), so a success is inferred:
// a probe whose last failure is older than one period and timeout has run
// since without failing; readiness and startup also show in Ready and
// Started.
func describeProbe(kind spec.ProbeKind, p spec.Probe, st api.ProcessStatus, evs []api.Event, now time.Time) api.ProbeDescription {
	p = p.WithDefaults()
	d := api.ProbeDescription{Kind: string(kind), Action: handlerAction(p.Handler),
		InitialDelay: p.InitialDelay.String(), Timeout: p.Timeout.String(), Period: p.Period.String(),
		SuccessThreshold: p.SuccessThreshold, FailureThreshold: p.FailureThreshold, LastResult: "unknown"}
	if st.State != string(lifecycle.StateRunning) || st.StartedAt == nil {
		return d
	}
	prefix := strings.ToUpper(string(kind[:1])) + string(kind[1:]) + " probe failed: "
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Reason == lifecycle.EventUnhealthy && e.InstanceID == st.InstanceID && strings.HasPrefix(e.Message, prefix) {
			d.LastFailure, d.LastFailureAt = strings.TrimPrefix(e.Message, prefix), &evs[i].Time
			break
		}
	}
	recentFailure := d.LastFailureAt != nil && now.Sub(*d.LastFailureAt) <= p.Period+p.Timeout
	switch {
	case recentFailure:
		d.LastResult = "failure"
	case kind == spec.Readiness && st.Ready, kind == spec.Startup && st.Started:
		d.LastResult = "success"
	case kind == spec.Liveness && now.Sub(*st.StartedAt) > p.InitialDelay+p.Period+p.Timeout:
		d.LastResult = "success" // it ran at least once, and no failure is recent
	}
	return d
}

// handlerAction is kubectl describe's form of a probe's or hook's action.
func handlerAction(h spec.Handler) string {
	switch {
	case h.Exec != nil:
		return fmt.Sprintf("exec %v", h.Exec.Command)
	case h.HTTPGet != nil:
		return "http-get " + h.HTTPGet.URL()
	case h.TCPSocket != nil:
		host := h.TCPSocket.Host
		if host == "" {
			host = spec.DefaultHost
		}
		return fmt.Sprintf("tcp-socket %s:%d", host, h.TCPSocket.Port)
	case h.GRPC != nil:
		return strings.TrimSpace(fmt.Sprintf("grpc %s:%d %s", spec.DefaultHost, h.GRPC.Port, h.GRPC.Service))
	case h.Sleep != nil:
		return "sleep " + h.Sleep.Duration.String()
	}
	return "none"
}

// lastEvents picks the last describeEvents events of a process (or, with
// groupOnly, those of the group naming no process), oldest first. A series
// of repeats is kept once, at its last occurrence.
func lastEvents(evs []api.Event, group, process string, groupOnly bool) []api.Event {
	out := []api.Event{}
	seen := map[string]bool{}
	for i := len(evs) - 1; i >= 0 && len(out) < describeEvents; i-- {
		e := evs[i]
		if e.Group != group || (groupOnly && e.Process != "") || (!groupOnly && e.Process != process) {
			continue
		}
		key := fmt.Sprint(e.FirstTime.UnixNano(), e.Type, e.Reason, e.InstanceID, e.Message)
		if e.Count > 1 && seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// describeDependencies spells depends_on blocks as describe shows them:
// "db ready (timeout 2m0s, restart)".
func describeDependencies(ds []spec.Dependency) []string {
	var out []string
	for _, d := range ds {
		s := d.Name + " " + string(d.EffectiveCondition())
		var extra []string
		if d.Timeout > 0 {
			extra = append(extra, "timeout "+d.Timeout.String())
		}
		if d.Restart {
			extra = append(extra, "restart")
		}
		if len(extra) > 0 {
			s += " (" + strings.Join(extra, ", ") + ")"
		}
		out = append(out, s)
	}
	return out
}
