package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
)

// The test binary is its own child (package testproc): with
// PODSUP_TEST_HELPER set, TestMain runs the named helper instead of the
// tests. Each helper is a tiny workload or an in-namespace test driver.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HolderArg {
		os.Exit(HolderMain()) // the test binary is its own sandbox holder
	}
	testproc.RunHelper()
	// Explicitly a child subreaper (a proc.Start alone would not make it
	// one): runChecked then sees every process a test orphaned as a child
	// of this one.
	proc.StartReaperAs(true)
	os.Exit(runChecked(m))
}

// helperCmd is a Cmd that runs helper name with args.
func helperCmd(t testing.TB, name string, args ...string) *proc.Cmd {
	t.Helper()
	argv := testproc.Argv(t, args...)
	return &proc.Cmd{Path: argv[0], Args: argv, RunAs: proc.RunAs{Env: testproc.HelperEnv(name)}}
}

var _ = syscall.SIGKILL

// What the tests need of a process's lifecycle beyond what podsup uses
// (package stack signals and kills through SignalProcess and
// KillProcessTree, and hears of exits through ProcessConfig.OnExit).

// ProcessFilter narrows listProcesses; zero fields match everything.
type ProcessFilter struct {
	Sandbox string
	State   State
}

// listProcesses returns the matching processes' statuses, sorted by id.
func (rt *Runtime) listProcesses(filter ProcessFilter) []ProcessStatus {
	rt.mu.Lock()
	var out []ProcessStatus
	var recs []*procRec
	for _, pr := range rt.procs {
		if (filter.Sandbox == "" || filter.Sandbox == pr.sb.id) && (filter.State == "" || filter.State == pr.stateLocked()) {
			out = append(out, rt.statusLocked(pr))
			recs = append(recs, pr)
		}
	}
	rt.mu.Unlock()
	for i := range out {
		rt.liveUsage(recs[i], &out[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// listSandboxes returns every sandbox's status, sorted by id.
func (rt *Runtime) listSandboxes() []SandboxStatus {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]SandboxStatus, 0, len(rt.sandboxes))
	for _, sb := range rt.sandboxes {
		out = append(out, rt.sandboxStatusLocked(sb))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// waitProcess blocks until the process is exited, with its final usage
// read, or ctx ends.
func (rt *Runtime) waitProcess(ctx context.Context, id string) (ProcessStatus, error) {
	pr, err := rt.lookupProc(id)
	if err != nil {
		return ProcessStatus{}, err
	}
	select {
	case <-pr.exited:
	case <-ctx.Done():
		return ProcessStatus{}, fmt.Errorf("waiting for process %q: %w", id, ctx.Err())
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.statusLocked(pr), nil
}

// stopProcess stops a process as the supervisor's worker does: SIGTERM
// to the main process and up to timeout for its exit (none with timeout
// 0), then what DeleteSandbox does to a process (killLocked): SIGKILL to
// its tree, a wait for the exit, and a kill of what the tree left.
func (rt *Runtime) stopProcess(ctx context.Context, id string, timeout time.Duration) error {
	pr, err := rt.lookupProc(id)
	if err != nil {
		return err
	}
	pr.op.Lock()
	defer pr.op.Unlock()
	rt.mu.Lock()
	p, running := pr.proc, pr.started && !pr.ended
	rt.mu.Unlock()
	if timeout > 0 && running {
		if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, proc.ErrProcessDone) {
			return fmt.Errorf("stopping process %q: %w", id, err)
		}
		t := time.NewTimer(timeout)
		select {
		case <-pr.exited:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return rt.killLocked(pr)
}
