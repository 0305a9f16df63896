package execrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// killWait bounds the wait for a SIGKILLed tree's leader to be reaped. Only a
// process stuck in uninterruptible sleep (a hung NFS read) outlives it.
const killWait = 10 * time.Second

// SandboxRunner runs commands through package proc: own process group,
// pidfd signals, exit from the one reaper; in a sandbox when Spawn is the
// runtime's.
//
// One run costs no goroutine of its own: the output is read on the caller's
// goroutine, and the exit, the timeout and the context's end all wake that
// read through the pipe's read deadline.
type SandboxRunner struct {
	// Spawn starts a command; nil means proc.Start. A group's sandbox
	// supplies one that sets the Cmd's Forker, Tree and cgroup so exec
	// probes and hooks run inside it (X6).
	Spawn func(*proc.Cmd) (*proc.Process, error)
}

var _ Runner = SandboxRunner{}

// Run starts req, keeps the first OutputLimit bytes of its combined output
// (reading and discarding the rest so it never blocks on a full pipe), and
// waits for its exit.
//
//   - Timeout: the whole process tree is SIGKILLed; Result.TimedOut.
//   - ctx ends: the tree is SIGKILLed too, and ctx's error is returned.
//   - Output is read until the command exits; background children it leaves
//     holding the pipe are not waited for (nor killed: only a timeout kills).
func (r SandboxRunner) Run(ctx context.Context, req Request) (Result, error) {
	if len(req.Argv) == 0 {
		return Result{}, ErrEmptyCommand
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	spawn := r.Spawn
	if spawn == nil {
		spawn = proc.Start
	}
	limit := req.OutputLimit
	if limit <= 0 {
		limit = MaxOutput
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("unable to create output pipe: %w", err)
	}
	defer pr.Close()
	start := time.Now()
	var deadline time.Time
	if req.Timeout > 0 {
		deadline = start.Add(req.Timeout)
		// Set before the start: OnExit and ctx may move it earlier, and
		// this must not undo them.
		_ = pr.SetReadDeadline(deadline)
	}
	// Each of these wakes a blocked read by moving its deadline to now.
	wake := func() { _ = pr.SetReadDeadline(time.Now()) }
	stopWatching := context.AfterFunc(ctx, wake)
	defer stopWatching()

	p, err := spawn(&proc.Cmd{
		Path: req.Argv[0], Args: req.Argv, RunAs: req.RunAs, Security: req.Security,

		Stdout: pw, Stderr: pw,
		OnExit: func(proc.Exit) { wake() }, // runs on the reaper: must not block
	})
	_ = pw.Close() // the child has its copy; ours would keep EOF away
	if err != nil {
		return Result{}, fmt.Errorf("unable to start command: %w", err)
	}

	out := capture{limit: limit}
	readErr := out.readFrom(pr)
	exited := isClosed(p.Done())
	res := Result{Output: out.buf, Truncated: out.truncated}
	switch {
	case readErr == nil && !exited:
		// EOF: every writer is gone, the leader is (nearly) done.
		if err := waitExit(ctx, p, deadline); err != nil {
			if ctx.Err() != nil {
				killAndWait(p)
				return res, ctx.Err()
			}
			res.TimedOut = true
		}
	case exited:
		// The leader is gone; keep what its stragglers already wrote.
		_ = pr.SetReadDeadline(time.Time{})
		out.drainNonBlocking(pr)
		res.Output, res.Truncated = out.buf, out.truncated
	case ctx.Err() != nil:
		killAndWait(p)
		return res, ctx.Err()
	case errors.Is(readErr, os.ErrDeadlineExceeded):
		res.TimedOut = true
	default:
		killAndWait(p)
		return res, fmt.Errorf("unable to read command output: %w", readErr)
	}
	if res.TimedOut {
		if err := killAndWait(p); err != nil {
			return res, err
		}
	}
	e := p.Exit()
	res.ExitCode = e.Code()
	res.Duration = e.Time.Sub(start)
	return res, nil
}

// waitExit waits for p's exit until deadline (zero: none) or ctx's end.
func waitExit(ctx context.Context, p *proc.Process, deadline time.Time) error {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-p.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-expired:
		return os.ErrDeadlineExceeded
	}
}

// killAndWait SIGKILLs p's whole tree (X10) and waits for the leader's exit.
func killAndWait(p *proc.Process) error {
	if err := p.KillTree(syscall.SIGKILL); err != nil && !errors.Is(err, proc.ErrProcessDone) {
		return fmt.Errorf("unable to kill command tree: %w", err)
	}
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-p.Done():
		return nil
	case <-t.C:
		return fmt.Errorf("command pid %d not reaped %s after SIGKILL", p.Pid(), killWait)
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// capture keeps the first limit bytes written and counts the rest away.
type capture struct {
	limit     int
	buf       []byte
	truncated bool
	scratch   []byte
}

func (c *capture) add(b []byte) {
	if room := c.limit - len(c.buf); room > 0 {
		if len(b) > room {
			b, c.truncated = b[:room], true
		}
		c.buf = append(c.buf, b...)
	} else if len(b) > 0 {
		c.truncated = true
	}
}

func (c *capture) chunk() []byte {
	if c.scratch == nil {
		c.scratch = make([]byte, 32<<10)
	}
	return c.scratch
}

// readFrom reads f until EOF (nil) or an error (a deadline included).
func (c *capture) readFrom(f *os.File) error {
	for {
		n, err := f.Read(c.chunk())
		c.add(c.scratch[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// drainNonBlocking reads whatever is already in the pipe without waiting
// for writers that may never close it.
func (c *capture) drainNonBlocking(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, err := unix.Read(int(fd), c.chunk())
			if n > 0 {
				c.add(c.scratch[:n])
			}
			if err == unix.EINTR {
				continue
			}
			if n <= 0 || err != nil { // EOF or EAGAIN: nothing more now
				return true
			}
		}
	})
}
