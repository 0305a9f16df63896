package proc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Adoption is a child that another process forks on this one's behalf,
// as its parent's (CLONE_PARENT, StartForParent): a sandbox holder inside
// a user namespace, which this process cannot enter, starts the sandbox's
// processes that way. The child is still this process's own: the one
// reaper collects its exit, and signals and trees work as for Start's.
type Adoption struct {
	// Fork asks for the fork and returns the child's pid, as this
	// process sees it, and a pidfd of it that Adopt takes and closes. An
	// error means no child was made (or it has exited with the exec's
	// failure, ForkExec's 253, which Adopt drops).
	Fork func() (pid, pidfd int, err error)
	// Tree, when set, replaces the process group as the way KillTree
	// reaches every descendant.
	Tree TreeKiller
	// OOMScoreAdj, when not nil, is written to the child's oom_score_adj
	// once it is registered (a process in a user namespace may not lower
	// its own).
	OOMScoreAdj *int
	// OnExit is called once, from the reaper goroutine, when the exit is
	// known. It must not block.
	OnExit func(Exit)
}

// Adopt registers the child a.Fork makes with the reaper. The reaper is
// told before the fork is asked for, so an exit reaped before Fork
// returns is held for it, as for Start (reaper.go: spawns in flight).
func Adopt(a Adoption) (*Process, error) {
	r := getReaper()
	procfd := -1
	if a.OOMScoreAdj != nil {
		if *a.OOMScoreAdj < -1000 || *a.OOMScoreAdj > 1000 {
			return nil, &SecurityError{Setting: "oom_score_adj", Err: fmt.Errorf("%w: %d is outside -1000..1000", ErrInvalidSecurity, *a.OOMScoreAdj)}
		}
		var err error
		if procfd, err = procDir(); err != nil {
			return nil, &SecurityError{Setting: "oom_score_adj", Err: err}
		}
	}
	s := r.subscribe()
	pid, pidfd, err := a.Fork()
	if err != nil {
		r.abandon(s)
		return nil, err
	}
	if pid <= 0 || pidfd < 0 {
		r.abandon(s)
		if pidfd >= 0 {
			_ = unix.Close(pidfd) // a pidfd: nothing to flush
		}
		return nil, fmt.Errorf("adopting a child: no pid (%d) or pidfd (%d)", pid, pidfd)
	}
	p := &Process{pid: pid, pgid: pid, pidfd: pidfd, done: make(chan struct{}), onExit: a.OnExit, tree: a.Tree}
	if p.tree == nil {
		p.tree = processGroup{p}
	}
	var oomErr error
	if procfd >= 0 {
		if oomErr = writeOOMScoreAdj(procfd, pid, *a.OOMScoreAdj); oomErr != nil {
			// Not started as asked: it goes, and its exit with it.
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			p.onExit = nil
		}
	}
	r.register(s, p)
	_ = unix.Close(pidfd) // a pidfd: nothing to flush
	p.pidfd = -1
	if oomErr != nil {
		return nil, &SecurityError{Setting: "oom_score_adj", Err: oomErr}
	}
	return p, nil
}
