package stack

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/podsup/podsup/hooks"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"github.com/podsup/podsup/systemd"
)

// capturingRuntime gives every instance's stdout and stderr to the logs hub
// (or, with log { mode = "passthrough" }, podsup's own) before the inner
// runtime starts it: the stack's output capture.
//
// It also bounds how many starts are under way at once: the supervisor
// starts every instance on a goroutine of its own, and each start holds a
// few fds until the child has them (its pipe's write end, the fork's pidfd,
// its cgroup placement). Ten thousand processes starting together would
// otherwise need twice the fds they need once running, and the last ones
// would fail with "too many open files". Forks gain nothing from more
// parallelism than a few per core.
//
// Everything else of supervisor.Runtime it passes on to next, each method
// written out so that none is dropped by a forgotten forward.
type capturingRuntime struct {
	next  supervisor.Runtime
	hub   *logs.Hub
	slots *startSlots // nil: unbounded, no retry
}

// maxStartsUnderWay bounds capturingRuntime's concurrent starts.
const maxStartsUnderWay = 32

func newCapturingRuntime(rt supervisor.Runtime, hub *logs.Hub) capturingRuntime {
	return capturingRuntime{next: rt, hub: hub, slots: newStartSlots(maxStartsUnderWay)}
}

// Start attaches the instance's output and starts it.
//
// When podsup's fds run out, which starts fail depended on which others
// were under way (each holds a few fds until its child has them): 40
// processes under a limit of 64 started 22 one run and 27 the next, the
// rest in back-off. A start that fails with EMFILE is therefore tried once
// more alone, with no other start under way: it fails only when it would
// fail on its own, so the processes that fit start, the same number every
// time, and the others wait in back-off with one reason that names the
// limit (tooManyOpenFiles). Retried by the supervisor's back-off like any
// failed start (kubelet's StartError, CrashLoopBackOff), they start once
// fds are freed or the limit is raised on a restart of podsup.
func (c capturingRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	leave, err := c.slots.enter(ctx, false)
	if errors.Is(err, supervisor.ErrWouldWait) {
		return nil, err // nothing done: the caller starts it the usual way
	}
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	inst, err := c.start(ctx, req, true)
	leave()
	if err == nil || !errors.Is(err, syscall.EMFILE) || c.slots == nil {
		return inst, err
	}
	if leave, gerr := c.slots.enter(ctx, true); gerr == nil {
		inst, err = c.start(ctx, req, false)
		leave()
	}
	if err != nil && errors.Is(err, syscall.EMFILE) {
		err = &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: newTooManyOpenFiles(req.Process, err)}
	}
	return inst, err
}

// start is one attempt of Start. With retry, a start that fails with
// EMFILE leaves the instance's log as it was (it will be attached again).
func (c capturingRuntime) start(ctx context.Context, req supervisor.StartRequest, retry bool) (supervisor.Instance, error) {
	if req.Stdout != nil || req.Stderr != nil {
		return c.next.Start(ctx, req) // a wrapper above took the output (journal = true)
	}
	att, err := c.hub.Attach(req.Group, req.Process.Name, req.InstanceID, req.Process.Log)
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	req.Stdout, req.Stderr = att.Stdout(), att.Stderr()
	if req.RestartsAtOnce {
		// podsup keeps its write end until the instance's exit has been
		// reported, and with it any restart armed for it (R8): the pipe
		// then hangs up when podsup closes it, after the next fork, not
		// when the process exits. That hang-up woke podsup's poller
		// thread, which took the CPU from the exiting process before it
		// could tell its parent (docs/benchmarks.md, S1).
		onExit := req.OnExit
		req.OnExit = func(st lifecycle.ExitStatus) {
			onExit(st)
			_ = att.CloseWriters() // nothing buffered in podsup
			proc.HoldFDs(-writers(req.Process.Log))
		}
	}
	inst, err := c.next.Start(ctx, req)
	if err != nil && (errors.Is(err, supervisor.ErrWouldWait) || retry && errors.Is(err, syscall.EMFILE)) {
		att.Withdraw() // closes its write ends too; it is attached again
		return nil, err
	}
	if err != nil || !req.RestartsAtOnce {
		// The child has (or needs) no more of podsup's write ends:
		// podsup keeps the read end alone, and the output ends with the
		// instance (package logs).
		_ = att.CloseWriters() // closes pipe ends podsup made; nothing to flush
	}
	if err == nil && req.RestartsAtOnce {
		proc.HoldFDs(writers(req.Process.Log)) // until the exit (OnExit above)
		// After the fork, off the path from an exit to the next fork.
		c.hub.Prepare(req.Group, req.Process.Name, req.Process.Log)
	}
	return inst, err
}

// writers is how many write ends a capture of l keeps: one pipe, or two
// with separate streams; none with passthrough.
func writers(l spec.Log) int {
	switch {
	case l.Mode == "passthrough":
		return 0
	case l.SeparateStreams:
		return 2
	}
	return 1
}

// ReleaseGroup forgets the group's captured output (its worker ended: the
// group was removed, replaced or podsup is stopping) and passes the release
// on.
func (c capturingRuntime) ReleaseGroup(group string) {
	c.hub.ForgetGroup(group)
	c.next.ReleaseGroup(group)
}

// ReleaseProcess forgets the captured output of a process a reload removed,
// once its last instance has exited, and passes the release on.
func (c capturingRuntime) ReleaseProcess(group, process string) {
	c.hub.Forget(group, process)
	c.next.ReleaseProcess(group, process)
}

// Spawner passes the inner runtime's sandbox spawner on, so exec probes
// and hooks run inside their group's sandbox (X6).
func (c capturingRuntime) Spawner(group string) func(*proc.Cmd) (*proc.Process, error) {
	return c.next.Spawner(group)
}

// Capabilities is the inner runtime's with output capture added.
func (c capturingRuntime) Capabilities() supervisor.Capabilities {
	caps := c.next.Capabilities()
	caps.OutputCapture = true
	return caps
}

var _ supervisor.Runtime = capturingRuntime{}

// hookOutput puts what a hook printed in its process's log, marked as the
// hook's (logs.Hub.AppendHook), with a last line saying so when more was
// written than a hook keeps: an operator reads a post_start's echo in
// `podsup logs` and podsup's output like the process's own lines (H2).
// With a journal (send not nil), a process whose output goes to the
// journal gets its hooks' there too, in stream (PODSUP_STREAM)
// hook:post_start and so on.
func hookOutput(hub *logs.Hub, send systemd.JournalSender) func(supervisor.HookRequest, []byte, bool) {
	return func(req supervisor.HookRequest, out []byte, truncated bool) {
		if truncated {
			if len(out) > 0 && out[len(out)-1] != '\n' {
				out = append(out[:len(out):len(out)], '\n')
			}
			out = append(out[:len(out):len(out)], fmt.Sprintf("podsup: the rest of this hook's output was not kept (the first %d bytes are)\n", hooks.MaxOutput)...)
		}
		if send != nil && req.Process.Log.Journal {
			w := systemd.NewProcessWriter(send, req.Group, req.Process.Name, req.InstanceID, logs.HookStream(req.Point).String())
			_, _ = w.Write(out) // as the process's own lines: a journal that refuses them loses them
			_ = w.Close()
			return
		}
		hub.AppendHook(req.Group, req.Process.Name, req.InstanceID, req.Process.Log, req.Point, out)
	}
}

// ProbeHost passes Next's probe host on (supervisor.ProbeHoster).
func (c capturingRuntime) ProbeHost(group string) string {
	return supervisor.ProbeHostOf(c.next, group)
}
