package supervisor

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/podsup/podsup/supervisor/internal/core"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/probes"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// This file is the worker's side of probes: one probes.Worker per process
// and probe kind (P1), created when the group's worker starts and stopped
// when it ends (the group stopped for good or replaced), across every
// instance of the process.
//
// Results reach the core the way everything does: as values in the
// group's mailbox. A probe worker's Publish and Report only put into the
// mailbox, which never blocks, and the group's worker never waits for a
// probe worker while it handles inputs (only Observe and Trigger, which
// do not block, and Stop at the very end), so neither can stall the other.
//
//	probe worker ──Report (each failed probe)──► ProbeReportInput ─► Unhealthy event
//	             ──Publish (threshold change)──► ProbeInput ────────► ready / started / kill (R4)
//	group worker ──Observe (after each input)──► the instance the probes see

// probeWorker is one probe kind of one process.
type probeWorker struct {
	process string
	kind    spec.ProbeKind
	// spec is the process spec it was built from.
	spec spec.Process
	w    *probes.Worker
	// seen is what it was last told (Observe).
	seen probes.Instance
	// running: its Run goroutine has been started.
	running bool
}

// eventOutputLimit caps the probe output quoted in an Unhealthy event.
const eventOutputLimit = 1024

// startProbes creates the group's probe workers. Their goroutines start
// at the first observation (observeProbes), so a worker's first probe,
// which it runs at once (as the kubelet's does), sees the group's first
// instance rather than nothing.
func (w *worker) startProbes() { w.reconcileProbes() }

// reconcileProbes keeps one probe worker per main process and probe kind
// of the core's current specs: a process-level reload may add, remove or
// change processes (the new spec takes over once the old instance ended).
func (w *worker) reconcileProbes() {
	if w.lc.probesBuilt && w.lc.probesReload == w.core.Reloads() && !w.lc.probesPending {
		return
	}
	w.lc.probesBuilt, w.lc.probesReload, w.lc.probesPending = true, w.core.Reloads(), false
	targets := w.core.ProbeTargets()
	// Each process as it runs, with its group's security defaults: a
	// reload that changes only those (supplemental_groups, say) changes
	// what an exec probe runs as, so its workers are rebuilt too.
	group := w.core.Spec()
	current := map[string]spec.Process{}
	for i, t := range targets {
		targets[i].Spec = spec.WithGroupSecurity(&group, t.Spec)
		current[t.Spec.Name] = targets[i].Spec
		if t.Pending {
			w.lc.probesPending = true
		}
	}
	kept := map[string]bool{}
	var probesKept []*probeWorker
	for _, pw := range w.lc.probes {
		if s, ok := current[pw.process]; ok && reflect.DeepEqual(s, pw.spec) {
			probesKept = append(probesKept, pw)
			kept[pw.process] = true
			continue
		}
		pw.w.Stop()
		w.lc.retiredProbes = append(w.lc.retiredProbes, pw)
	}
	w.lc.probes = probesKept
	clk := w.clock
	if w.lc.probeClock != nil {
		clk = w.lc.probeClock
	}
	spawn := w.spawner()
	for _, t := range targets {
		pr := t.Spec
		if kept[pr.Name] {
			continue
		}
		kinds := []struct {
			kind  spec.ProbeKind
			probe *spec.Probe
		}{{spec.Startup, pr.StartupProbe}, {spec.Liveness, pr.LivenessProbe}, {spec.Readiness, pr.ReadinessProbe}}
		for _, k := range kinds {
			if k.probe == nil {
				continue
			}
			pw, err := w.newProbeWorker(pr, k.kind, *k.probe, spawn, clk)
			if err != nil {
				// Validation makes this unreachable for exec, http_get and
				// tcp_socket; say so loudly if it is not.
				w.log.Error().Err(err).Str("process", pr.Name).Str("probe", string(k.kind)).Msg("probe not started")
				continue
			}
			w.lc.probes = append(w.lc.probes, pw)
		}
	}
}

func (w *worker) newProbeWorker(pr spec.Process, kind spec.ProbeKind, probe spec.Probe, spawn func(*proc.Cmd) (*proc.Process, error), clk clock.Clock) (*probeWorker, error) {
	// As narrowed as the process (pr has its group's security,
	// reconcileProbes): kubelet runs an exec probe in the container.
	sec, _ := StartSecurity(pr, w.core.Spec().Sandbox != nil)
	h, err := probes.NewHandler(probe, probes.ExecContext{
		Runner:   execrun.SandboxRunner{Spawn: spawn},
		RunAs:    RunAs(pr),
		Security: sec,
	})
	if err != nil {
		return nil, err
	}
	if hostless(probe.Handler) {
		if _, ok := w.rt.(ProbeHoster); ok {
			h = &hostedHandler{probe: probe, local: h, rt: w.rt, group: w.name}
		}
	}
	if w.lc.probeHandler != nil {
		h = w.lc.probeHandler(pr.Name, kind)
	}
	withOutput := probe.Exec != nil // kubelet quotes an exec probe's output
	mb := w.mb
	pw := &probeWorker{process: pr.Name, kind: kind, spec: pr}
	pw.w, err = probes.NewWorker(probes.WorkerConfig{
		Kind: kind, Probe: probe, Handler: h, Clock: clk,
		Logger: w.log.With().Str("process", pr.Name).Logger(),
		Publish: func(u probes.Update) {
			if u.Initial {
				return // P4's initial values are the core's own (S3, S4)
			}
			mb.put(core.ProbeInput{
				Instance: u.InstanceID, Probe: u.Kind, Success: u.Result == probes.Success,
				Message: probeMessage(u, withOutput), Reported: true,
			})
		},
		Report: func(u probes.Update) {
			if w.probeStats != nil {
				w.probeStats.observe(w.name, pr.Name, u.Kind, u.Result, u.Duration)
			}
			if u.Result == probes.Failure {
				mb.put(core.ProbeReportInput{Instance: u.InstanceID, Probe: u.Kind, Message: probeMessage(u, withOutput)})
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return pw, nil
}

// stopProbes stops every probe worker and waits for them, so that no probe
// command outlives the group's worker.
func (w *worker) stopProbes() {
	for _, pw := range w.lc.probes {
		pw.w.Stop()
	}
	for _, pw := range append(w.lc.probes, w.lc.retiredProbes...) {
		if pw.running {
			<-pw.w.Done()
		}
	}
}

// observeProbes tells each probe worker what its process looks like now.
// A readiness worker probes at once when its instance becomes started
// (as the kubelet does when a startup probe succeeds), so that a process
// is not left unready for a whole period after it could be ready.
func (w *worker) observeProbes() {
	w.reconcileProbes()
	for _, pw := range w.lc.probes {
		v, ok := w.core.ProbeViewOf(pw.process)
		if !ok {
			continue
		}
		if !pw.running && v.Starting {
			// Its first probe comes at once when it begins: let it begin
			// with the instance the start in flight is about to run.
			continue
		}
		view := w.probeView(v)
		if pw.running && view == pw.seen {
			continue
		}
		becameStarted := view.Running && view.Started && !(pw.seen.ID == view.ID && pw.seen.Running && pw.seen.Started)
		pw.seen = view
		pw.w.Observe(view)
		switch {
		case !pw.running:
			pw.running = true
			go pw.w.Run(w.ctx) // probes at once: no Trigger needed
		case becameStarted && pw.kind == spec.Readiness:
			pw.w.Trigger()
		}
	}
}

// probeView is the instance the probes see. An instance in its pre_start
// or post_start hook is invisible to them (H1: probes begin once post_start
// returned); a finished one is not running (P8: its probes fail, and the
// core ignores results of instances that are not current). When podsup
// is shutting down, liveness and startup go quiet (P9).
func (w *worker) probeView(v core.ProbeView) probes.Instance {
	if v.ID == "" {
		return probes.Instance{}
	}
	return probes.Instance{
		ID: v.ID, Running: v.Running, StartedAt: v.StartedAt, Started: v.Started,
		GroupStopping: w.core.ShuttingDown(),
	}
}

// probeMessage is the text of an Unhealthy event: the probe's message and,
// for exec probes, its output (as kubelet quotes it), capped.
func probeMessage(u probes.Update, withOutput bool) string {
	msg := u.Message
	if withOutput {
		if out := strings.TrimSpace(string(u.Output)); out != "" {
			if len(out) > eventOutputLimit {
				cut := eventOutputLimit
				for cut > 0 && !utf8.RuneStart(out[cut]) {
					cut--
				}
				out = out[:cut] + "…"
			}
			if msg != "" {
				msg += ": "
			}
			msg += out
		}
	}
	if msg == "" {
		msg = u.Result.String()
	}
	return msg
}

// hostless says whether h is an http_get or tcp_socket action that names
// no host.
func hostless(h spec.Handler) bool {
	return (h.HTTPGet != nil && h.HTTPGet.Host == "") || (h.TCPSocket != nil && h.TCPSocket.Host == "")
}

// hostedHandler probes a hostless action at the host the runtime names
// for the group now (its sandbox's address), else as local does.
type hostedHandler struct {
	probe spec.Probe
	local probes.Handler
	rt    Runtime
	group string

	mu      sync.Mutex
	host    string // the host of handler
	handler probes.Handler
}

func (h *hostedHandler) Probe(ctx context.Context) (probes.Result, string, error) {
	return h.current().Probe(ctx)
}

// ProbeDetail keeps an http_get probe's body (DetailedHandler).
func (h *hostedHandler) ProbeDetail(ctx context.Context) (probes.Detail, error) {
	cur := h.current()
	if d, ok := cur.(probes.DetailedHandler); ok {
		return d.ProbeDetail(ctx)
	}
	r, msg, err := cur.Probe(ctx)
	return probes.Detail{Result: r, Message: msg}, err
}

// current is the handler for the runtime's host now.
func (h *hostedHandler) current() probes.Handler {
	host := ProbeHostOf(h.rt, h.group)
	if host == "" {
		return h.local
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if host != h.host || h.handler == nil {
		p := h.probe
		switch {
		case p.HTTPGet != nil:
			a := *p.HTTPGet
			a.Host = host
			p.HTTPGet = &a
		case p.TCPSocket != nil:
			a := *p.TCPSocket
			a.Host = host
			p.TCPSocket = &a
		}
		nh, err := probes.NewHandler(p, probes.ExecContext{})
		if err != nil {
			return h.local
		}
		h.host, h.handler = host, nh
	}
	return h.handler
}
