package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"golang.org/x/sys/unix"
)

// defaultExecOutput is ExecRequest.OutputLimit's default.
const defaultExecOutput = 64 << 10

// Spawn starts c inside the sandbox: in its namespaces (forked by its
// namespace thread, so still podsup's child) and in a cgroup of its own
// under the sandbox's ("exec+N": '+' cannot occur in a process id), so its
// tree can be killed whole and the sandbox's limits apply. When the
// command's exit is known, whatever its tree left is killed and the cgroup
// removed. See Runtime.
func (rt *LocalRuntime) Spawn(sandboxID string, c *proc.Cmd) (*proc.Process, error) {
	sb, err := rt.readySandbox(sandboxID)
	if err != nil {
		return nil, err
	}
	var cg *cgroups.Process
	if sb.group != nil {
		cg, err = sb.group.NewProcess(fmt.Sprintf("exec+%d", rt.execSeq.Add(1)))
		if err != nil {
			return nil, fmt.Errorf("spawning in sandbox %q: %w", sandboxID, err)
		}
	}
	forker, fd, release, err := rt.forker(sb, cg)
	if err != nil {
		rt.dropExecCgroup(sb, cg)
		return nil, fmt.Errorf("spawning in sandbox %q: %w", sandboxID, err)
	}
	cc := *c
	cc.Forker, cc.UseCgroupFD, cc.CgroupFD, cc.Tree = forker, fd >= 0, fd, nil
	if cg != nil {
		cc.Tree = cg
	}
	userOnExit := c.OnExit
	cc.OnExit = func(e proc.Exit) {
		if userOnExit != nil {
			userOnExit(e)
		}
		if cg != nil {
			go rt.dropExecCgroup(sb, cg) // the reaper must not wait for a kill
		}
	}
	p, err := proc.Start(&cc)
	release()
	if err != nil {
		rt.dropExecCgroup(sb, cg)
		return nil, err
	}
	return p, nil
}

// dropExecCgroup kills what is left in an exec's cgroup and removes it.
func (rt *LocalRuntime) dropExecCgroup(sb *sandboxRec, cg *cgroups.Process) {
	if cg == nil {
		return
	}
	sb.cgMu.RLock()
	defer sb.cgMu.RUnlock()
	if err := errors.Join(cg.Kill(), cg.Delete()); err != nil {
		rt.log.Warn().Err(err).Str("cgroup", cg.Path()).Msg("cannot remove an exec's cgroup")
	}
}

// Exec runs req inside the sandbox and collects its output. See Runtime.
func (rt *LocalRuntime) Exec(ctx context.Context, sandboxID string, req ExecRequest) (ExecResult, error) {
	if len(req.Command) == 0 || req.Command[0] == "" {
		return ExecResult{}, fmt.Errorf("exec in sandbox %q: %w: empty command", sandboxID, ErrInvalidArgument)
	}
	limit := req.OutputLimit
	if limit <= 0 {
		limit = defaultExecOutput
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec in sandbox %q: creating output pipe: %w", sandboxID, err)
	}
	defer pr.Close()
	start := time.Now()
	p, err := rt.Spawn(sandboxID, &proc.Cmd{
		Path: req.Command[0], Args: req.Command, Env: req.Env, Dir: req.Dir,
		User: req.User, Group: req.Group, Stdout: pw, Stderr: pw,
	})
	_ = pw.Close() // the child has its copy; ours would keep EOF away
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec in sandbox %q: %w", sandboxID, err)
	}
	out := make(chan capped, 1)
	go func() { out <- readCapped(pr, limit) }()

	res := ExecResult{}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var ctxErr error
	select {
	case <-p.Done():
	case <-timeout:
		res.TimedOut = true
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	if !isClosed(p.Done()) {
		_ = p.KillTree(unix.SIGKILL) // ErrProcessDone: it just ended by itself
		select {
		case <-p.Done():
		case <-time.After(rt.opts.KillTimeout):
			return res, fmt.Errorf("exec in sandbox %q: pid %d not reaped after SIGKILL: %w", sandboxID, p.Pid(), ErrUnavailable)
		}
	}
	// Leftovers of the tree may hold the pipe open; the exec's cgroup is
	// being killed (Spawn), but without cgroups nothing would: bound the
	// wait for EOF and give up on the rest of the output.
	_ = pr.SetReadDeadline(time.Now().Add(time.Second))
	c := <-out
	res.Exit = p.Exit()
	res.Duration = time.Since(start)
	res.Output, res.Truncated = c.buf, c.truncated
	res.ExitCode = res.Exit.Code()
	if res.TimedOut {
		res.ExitCode = -1
	}
	if ctxErr != nil {
		return res, fmt.Errorf("exec in sandbox %q: %w", sandboxID, ctxErr)
	}
	return res, nil
}

type capped struct {
	buf       []byte
	truncated bool
}

// readCapped reads r to EOF (or an error, a deadline), keeping the first
// limit bytes.
func readCapped(r io.Reader, limit int) capped {
	var c capped
	chunk := make([]byte, 4096)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			keep := min(n, limit-len(c.buf))
			c.buf = append(c.buf, chunk[:keep]...)
			if keep < n {
				c.truncated = true
			}
		}
		if err != nil {
			return c
		}
	}
}
