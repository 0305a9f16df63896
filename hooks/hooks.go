// Package hooks owns running one lifecycle hook handler (exec, http_get,
// sleep) within its time budget and reporting what happened and how long it
// took (docs/semantics.md X5, H1–H4, K3).
//
// It reports; it never decides what a failure means. Whether a failed
// post_start kills the process (H2), a pre_start fails the start (X5), or a
// pre_stop merely logs (H4) is the supervisor's call, as is charging a
// pre_stop's Duration to the grace period (K3).
//
//	    pre_start ──► process starts ──► post_start (concurrent with it)
//	                                        │
//	kill path: pre_stop ──► stop signal ──► SIGKILL      natural exit
//	                                        │                 │
//	                                        └──► post_stop ◄──┘
package hooks

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// Outcome is what running a hook did.
type Outcome struct {
	// Duration is how long the hook ran, on the Runner's clock.
	Duration time.Duration
	// Output is an exec hook's combined stdout+stderr or an http_get
	// hook's response body, capped at MaxOutput.
	Output []byte
	// Truncated says the hook wrote (or answered) more than MaxOutput;
	// the rest was read and not kept.
	Truncated bool
	// Err is nil when the hook succeeded. Otherwise it wraps ErrTimeout,
	// *ExitError, *StatusError, ErrNoAction, the context's error, or why
	// the hook could not run; when the hook printed or answered anything
	// it is an *OutputError, whose message quotes it (H2).
	Err error
	// TimedOut says the hook outlived Timeout (and an exec hook's process
	// tree was killed).
	TimedOut bool
	// Timeout is the bound that applied; 0 means none.
	Timeout time.Duration
}

// MaxOutput caps the output a hook keeps: 10 KiB, the bound of exec
// probes (P10) and of the kubelet's lifecycle HTTP handler
// (pkg/kubelet/lifecycle/handlers.go maxRespBodyLength). All of it goes to
// the process's log; a failure's message quotes MaxMessageOutput of it.
const MaxOutput = execrun.MaxOutput

// MaxMessageOutput caps the output an *OutputError quotes: the message
// ends up in a FailedXHook event, and podsup keeps a thousand events;
// 1 KiB is what an Unhealthy event quotes of a probe's output (P10) and
// Kubernetes' own limit on an event's note (NoteLengthLimit,
// pkg/apis/core/validation/events.go). The whole kept output is in the
// process's log, marked as the hook's.
const MaxMessageOutput = 1 << 10

// OutputError is a failed hook with what it printed (exec) or answered
// (http_get). Its message is the kubelet's for a failed exec hook: the
// error, then "message: " and the output quoted as a Go string
// (pkg/kubelet/lifecycle/handlers.go: "... failed - error: %v, message:
// %q"), so it holds no byte a terminal would act on, cut at
// MaxMessageOutput.
type OutputError struct {
	Err error
	// Output is all that was kept: at most MaxOutput.
	Output []byte
	// Truncated says more than MaxOutput was written.
	Truncated bool
}

func (e *OutputError) Error() string {
	out, cut := e.Output, ""
	if len(out) > MaxMessageOutput {
		n := MaxMessageOutput
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		out = out[:n]
		more := ""
		if e.Truncated {
			more = "more than "
		}
		cut = fmt.Sprintf(" (the first %d of %s%d bytes)", n, more, len(e.Output))
	} else if e.Truncated {
		cut = fmt.Sprintf(" (the first %d bytes)", len(out))
	}
	return fmt.Sprintf("%v, message: %q%s", e.Err, out, cut)
}

func (e *OutputError) Unwrap() error { return e.Err }

// ErrTimeout is wrapped by Outcome.Err when a hook outlived its timeout.
var ErrTimeout = errors.New("hook timed out")

// ErrNoAction is returned for a hook without exec, http_get or sleep.
var ErrNoAction = errors.New("hook has no exec, http_get or sleep action")

// ExitError is an exec hook that exited non-zero.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("hook command exited with code %d", e.Code) }

// StatusError is an http_get hook answered outside 200–399.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("hook HTTP GET answered status %d", e.Code) }

// Runner runs hooks for one process: exec hooks get its environment,
// directory and user, and run through Exec (X6: inside its sandbox).
// The zero value runs exec hooks with podsup's own context through
// package proc, on the real clock.
type Runner struct {
	// Exec runs exec hooks; nil means execrun.SandboxRunner{}.
	Exec execrun.Runner
	proc.RunAs
	// Security is the process's: an exec hook runs as narrowed as the
	// process it belongs to (kubelet runs it in the container).
	Security *proc.Security
	// Clock times hooks and runs sleep hooks; nil means the real clock.
	Clock clock.Clock
}

// Run runs hook at point with the zero Runner.
func Run(ctx context.Context, hook spec.Hook, point spec.HookPoint, budget time.Duration) Outcome {
	return Runner{}.Run(ctx, hook, point, budget)
}

// Timeout is the bound for hook at point: its own Timeout, else X5's
// default for the point (spec.DefaultHookTimeout), capped by budget when
// budget > 0. 0 means no bound (post_start, H3; pre_stop, whose end the
// supervisor does not bound by the grace but ties to its instance's
// SIGKILL through ctx, K9).
func Timeout(hook spec.Hook, point spec.HookPoint, budget time.Duration) time.Duration {
	t := hook.Timeout
	if t == 0 {
		t = spec.DefaultHookTimeout(point)
	}
	if budget > 0 && (t == 0 || budget < t) {
		t = budget
	}
	return t
}

// Run runs hook at point within Timeout(hook, point, budget), or until ctx
// ends, and reports. No process an exec hook started outlives the hook's
// timeout or ctx.
func (r Runner) Run(ctx context.Context, hook spec.Hook, point spec.HookPoint, budget time.Duration) Outcome {
	clk := clock.Or(r.Clock)
	timeout := Timeout(hook, point, budget)
	start := clk.Now()
	var out Outcome
	switch {
	case hook.Exec != nil:
		out = r.runExec(ctx, hook.Exec, timeout)
	case hook.HTTPGet != nil:
		out = runHTTPGet(ctx, hook.HTTPGet, timeout)
	case hook.Sleep != nil:
		out = runSleep(ctx, clk, hook.Sleep.Duration, timeout)
	default:
		out.Err = ErrNoAction
	}
	out.Duration = clk.Now().Sub(start)
	out.Timeout = timeout
	if out.Err != nil && (len(out.Output) > 0 || out.Truncated) {
		out.Err = &OutputError{Err: out.Err, Output: out.Output, Truncated: out.Truncated}
	}
	if out.Err != nil && point != "" {
		out.Err = fmt.Errorf("%s hook: %w", point, out.Err)
	}
	return out
}

func (r Runner) runExec(ctx context.Context, a *spec.ExecAction, timeout time.Duration) Outcome {
	ex := r.Exec
	if ex == nil {
		ex = execrun.SandboxRunner{}
	}
	res, err := ex.Run(ctx, execrun.Request{
		Argv: a.Command, RunAs: r.RunAs, Security: r.Security, Timeout: timeout,
	})
	out := Outcome{Output: res.Output, Truncated: res.Truncated}
	switch {
	case err != nil:
		out.Err = fmt.Errorf("unable to run hook command %q: %w", a.Command, err)
	case res.TimedOut:
		out.TimedOut = true
		out.Err = fmt.Errorf("%w after %s (process tree killed)", ErrTimeout, timeout)
	case res.ExitCode != 0:
		out.Err = &ExitError{Code: res.ExitCode}
	}
	return out
}

func runSleep(ctx context.Context, clk clock.Clock, d, timeout time.Duration) Outcome {
	if d <= 0 {
		return Outcome{}
	}
	var expired <-chan time.Time
	if timeout > 0 && timeout < d {
		t := clk.NewTimer(timeout)
		defer t.Stop()
		expired = t.C()
	}
	done := clk.NewTimer(d)
	defer done.Stop()
	select {
	case <-done.C():
		return Outcome{}
	case <-expired:
		return Outcome{TimedOut: true, Err: fmt.Errorf("%w after %s (sleep of %s)", ErrTimeout, timeout, d)}
	case <-ctx.Done():
		return Outcome{Err: fmt.Errorf("sleep cut short: %w", ctx.Err())}
	}
}
