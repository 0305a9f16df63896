package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podsup/podsup/supervisor/internal/core"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/hooks"
	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/probes"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// This file is the worker's side of hooks and of the per-group exec seam:
// it runs the hooks the core asks for in goroutines of their own, ties
// each to a context that ends when its instance does, counts the ones in
// flight (a group is not done while a post_stop still runs), and posts
// each end back into the mailbox as a value.

// DefaultHookRunner runs hooks with package hooks: exec hooks with the
// process's environment, directory and user through the request's Spawn
// (the group's sandbox), http_get and sleep hooks in podsup, each within
// its own timeout or X5's default. A pre_stop is not bound by the grace:
// the supervisor stops waiting for it then (K3), and it ends with its
// instance's SIGKILL, when ctx ends (K9). It is what Options.Hooks nil
// means.
type DefaultHookRunner struct {
	// Clock times sleep hooks; nil is the real clock.
	Clock clock.Clock
	// Output, when set, is given what each hook printed before its end
	// reaches the core (so the lines precede its FailedXHook event): an
	// exec hook's output whether it failed or not, an http_get hook's body
	// when it failed; at most hooks.MaxOutput, truncated when more was
	// written. Package stack puts it in the process's log (H2).
	Output func(req HookRequest, output []byte, truncated bool)
}

var _ HookRunner = DefaultHookRunner{}

// HookError is a hook that failed: why, and what it printed. Its message
// is Err's, which quotes the output (hooks.OutputError): the core puts it
// in the FailedXHook event, as the kubelet puts an exec hook's output in
// its event (H2).
type HookError struct {
	Point spec.HookPoint
	// Err wraps hooks.ErrTimeout, *hooks.ExitError, *hooks.StatusError or
	// why the hook could not run, in a *hooks.OutputError when the hook
	// printed anything.
	Err error
	// Output is an exec hook's combined output or an http_get hook's
	// body, capped at hooks.MaxOutput.
	Output []byte
}

func (e *HookError) Error() string { return e.Err.Error() }
func (e *HookError) Unwrap() error { return e.Err }

func (r DefaultHookRunner) Run(ctx context.Context, req HookRequest) error {
	pr := req.Process
	// As narrowed as the process: a context that cannot start it (its
	// start fails on it) leaves nothing of it to hook.
	sec, _ := StartSecurity(pr, req.Sandboxed)
	runner := hooks.Runner{
		Exec:     execrun.SandboxRunner{Spawn: req.Spawn},
		RunAs:    RunAs(pr),
		Security: sec,
		Clock:    r.Clock,
	}
	out := runner.Run(ctx, req.Hook, req.Point, 0) // K9: Budget is not the hook's bound
	if r.Output != nil && (len(out.Output) > 0 || out.Truncated) && (req.Hook.Exec != nil || out.Err != nil) {
		r.Output(req, out.Output, out.Truncated)
	}
	if out.Err != nil {
		return &HookError{Point: req.Point, Err: out.Err, Output: out.Output}
	}
	return nil
}

// hookExec is the worker's executor state for hooks and probes. Only the
// worker goroutine touches it.
type hookExec struct {
	// inflight counts hook goroutines whose end the worker has not yet
	// handled.
	inflight int
	// instances holds a context per instance with hooks running; it ends
	// when the instance does (so a post_start or pre_stop never outlives
	// the process it is about).
	instances map[string]context.CancelFunc
	instCtx   map[string]context.Context
	// groupCtx bounds hooks that outlive their instance (post_stop); a
	// second shutdown request ends it.
	groupCtx    context.Context
	groupCancel context.CancelFunc

	probes []*probeWorker
	// retiredProbes were stopped by a reload; stopProbes waits for them.
	retiredProbes []*probeWorker
	// probesBuilt, probesReload and probesPending say when the probe
	// workers must be matched against the core's processes again: at the
	// start, after a reload, and while a changed spec waits for its old
	// instance to end.
	probesBuilt   bool
	probesReload  int
	probesPending bool
	// probeClock, when set, replaces the supervisor's clock for the probe
	// workers (tests watch their timers with it).
	probeClock clock.Clock
	// probeHandler, when set, replaces the handlers built from the spec
	// (tests script probe outcomes with it).
	probeHandler func(process string, kind spec.ProbeKind) probes.Handler
}

// spawner is the group's exec seam (X6). The runtime is asked at each
// spawn, not once, because the sandbox of a group appears with its first
// start, after its probe workers were built.
func (w *worker) spawner() func(*proc.Cmd) (*proc.Process, error) {
	rt, group := w.rt, w.name
	return func(c *proc.Cmd) (*proc.Process, error) {
		spawn := rt.Spawner(group)
		if spawn == nil {
			spawn = proc.Start
		}
		return spawn(c)
	}
}

// runHook carries out a HookAction: the hook runs in a goroutine of its
// own and its end is posted as the point's done input.
func (w *worker) runHook(a core.HookAction) {
	switch a.Point {
	case spec.PreStart, spec.PostStart:
		w.startHook(a.Spec, a.Instance, a.Point, 0, w.instanceContext(a.Instance))
	case spec.PostStop:
		w.startHook(a.Spec, a.Instance, a.Point, 0, w.groupHookContext())
	}
}

// startHook runs pr's hook at point for instance within budget.
func (w *worker) startHook(pr spec.Process, instance string, point spec.HookPoint, budget time.Duration, ctx context.Context) {
	process := pr.Name
	done := func(err error) core.Input {
		switch point {
		case spec.PreStart:
			return core.PreStartDoneInput{Instance: instance, Err: err}
		case spec.PostStart:
			return core.PostStartDoneInput{Instance: instance, Err: err}
		case spec.PreStop:
			return core.PreStopDoneInput{Instance: instance, Err: err}
		default:
			return core.PostStopDoneInput{Process: process, Instance: instance, Err: err}
		}
	}
	w.lc.inflight++
	if w.hooks == nil {
		w.mb.put(done(errNoHookRunner))
		return
	}
	// A hook runs as its process does, with the group's security context
	// under the process's (its supplementary groups).
	group := w.core.Spec()
	req := HookRequest{Group: w.name, InstanceID: instance, Process: spec.WithGroupSecurity(&group, pr), Point: point, Budget: budget,
		Spawn: w.spawner(), Sandboxed: group.Sandbox != nil}
	if h := hookAt(pr, point); h != nil {
		req.Hook = *h
	}
	if inst := w.insts[instance]; inst != nil {
		req.Pid = inst.Pid()
	}
	finish := func(err error) {
		if err != nil && ctx.Err() != nil && point == spec.PreStop {
			// K9: ended with its instance (or the worker's end), not by
			// itself. An exec or HTTP hook then failed, as kubelet's would
			// (the exec dies with the container, the request finds none);
			// kubelet's sleep would have run out quietly.
			if req.Hook.Sleep != nil {
				err = nil
			} else {
				err = fmt.Errorf("%w (%v)", core.ErrHookEndedWithInstance, err)
			}
		}
		var he *HookError
		if errors.As(err, &he) && len(he.Output) > 0 {
			w.log.Debug().Str("process", process).Str("instance", instance).Str("hook", string(point)).
				Bytes("output", he.Output).Msg("hook output")
		}
		w.mb.put(done(err))
	}
	if s, ok := w.hooks.(hookStarter); ok {
		s.startHook(ctx, req, finish)
		return
	}
	go func() { finish(w.hooks.Run(ctx, req)) }()
}

// hookStarter is a HookRunner that starts a hook without a goroutine of
// the worker's and calls finish exactly once when it ends. Tests use it to
// run hooks on a fake clock: whatever the hook arms is armed before the
// worker is quiet.
type hookStarter interface {
	startHook(ctx context.Context, req HookRequest, finish func(error))
}

func hookAt(p spec.Process, point spec.HookPoint) *spec.Hook {
	switch point {
	case spec.PreStart:
		return p.PreStart
	case spec.PostStart:
		return p.PostStart
	case spec.PreStop:
		return p.PreStop
	case spec.PostStop:
		return p.PostStop
	}
	return nil
}

// instanceContext is the context of instance's hooks, created on first use.
func (w *worker) instanceContext(instance string) context.Context {
	if ctx, ok := w.lc.instCtx[instance]; ok {
		return ctx
	}
	if w.lc.instCtx == nil {
		w.lc.instCtx = map[string]context.Context{}
		w.lc.instances = map[string]context.CancelFunc{}
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.lc.instCtx[instance], w.lc.instances[instance] = ctx, cancel
	return ctx
}

func (w *worker) groupHookContext() context.Context {
	if w.lc.groupCtx == nil {
		w.lc.groupCtx, w.lc.groupCancel = context.WithCancel(w.ctx)
	}
	return w.lc.groupCtx
}

// endInstanceHooks ends the hooks still running for instance, at the
// SIGKILL of its tree (K9): a pre_stop that outlived the grace ends with
// the instance, not at the grace, as an exec in a container dies with the
// container. The hook's processes are not in the instance's tree (they
// run in a cgroup or process group of their own), so its context is what
// kills them. The context stays until syncLifecycle drops it.
func (w *worker) endInstanceHooks(instance string) {
	if cancel := w.lc.instances[instance]; cancel != nil {
		cancel()
	}
}

// noteInput is the executor's bookkeeping for an input about to be
// handled: a hook's end leaves the in-flight count, and a second shutdown
// request cuts post_stop hooks short (X9: the second request is "now").
func (w *worker) noteInput(item any) {
	switch in := item.(type) {
	case core.PreStartDoneInput, core.PostStartDoneInput, core.PreStopDoneInput, core.PostStopDoneInput:
		w.lc.inflight--
	case core.CommandInput:
		if in.Kind == core.CmdShutdown && w.core.ShuttingDown() && w.lc.groupCancel != nil {
			w.lc.groupCancel()
		}
	}
}

// hooksIdle reports that no hook goroutine is left.
func (w *worker) hooksIdle() bool { return w.lc.inflight == 0 }

// syncLifecycle runs after each handled input: the hooks of instances that
// are gone are cancelled, and the probe workers see the new state.
func (w *worker) syncLifecycle() {
	for id, cancel := range w.lc.instances {
		if _, live := w.core.InstanceSpec(id); !live {
			cancel()
			delete(w.lc.instances, id)
			delete(w.lc.instCtx, id)
		}
	}
	w.observeProbes()
}
