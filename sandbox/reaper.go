package sandbox

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reaper is the process-wide owner of wait4. See the package doc.
type reaper struct {
	// mu is held by Start across fork+register and by the reaper across
	// lookup+dispatch; it guards owners.
	mu     sync.Mutex
	owners map[int]*Process

	orphans atomic.Uint64
	// subreaper records whether this process is PID 1 or a child
	// subreaper, i.e. whether orphans of its descendants come back to it.
	subreaper bool
	kick      chan os.Signal
}

var (
	theReaper     *reaper
	theReaperOnce sync.Once
)

// getReaper starts the reaper on first use.
func getReaper() *reaper {
	theReaperOnce.Do(func() {
		r := &reaper{owners: make(map[int]*Process), kick: make(chan os.Signal, 1)}
		r.subreaper = os.Getpid() == 1
		if !r.subreaper {
			// Orphans of our descendants must come to us, not to the
			// host's init, or they could never be reaped (or killed) here.
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err == nil {
				r.subreaper = true
			}
		}
		signal.Notify(r.kick, syscall.SIGCHLD)
		go r.loop()
		theReaper = r
	})
	return theReaper
}

// loop drains exits each time SIGCHLD arrives. Signals coalesce, so one
// SIGCHLD may stand for many exits: reap until wait4 says there is nothing
// left. The channel is kicked once at start to collect exits that happened
// before Notify was installed.
func (r *reaper) loop() {
	r.reapAll()
	for range r.kick {
		r.reapAll()
	}
}

func (r *reaper) reapAll() {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return // ECHILD: no children; 0: none has exited yet
		}
		e := Exit{Pid: pid, Status: ws, Rusage: ru, Time: time.Now()}
		r.mu.Lock()
		p := r.owners[pid]
		delete(r.owners, pid)
		r.mu.Unlock()
		if p == nil {
			r.orphans.Add(1)
			continue
		}
		p.exited(e)
	}
}

// ReaperStats describes the reaper's work so far.
type ReaperStats struct {
	// Tracked is the number of started processes still running.
	Tracked int
	// Orphans is the number of exits reaped that nobody here started.
	Orphans uint64
	// Subreaper reports whether orphaned descendants come back to this
	// process (it is PID 1 or PR_SET_CHILD_SUBREAPER succeeded).
	Subreaper bool
}

// Stats reports on the reaper, starting it if needed.
func Stats() ReaperStats {
	r := getReaper()
	r.mu.Lock()
	defer r.mu.Unlock()
	return ReaperStats{Tracked: len(r.owners), Orphans: r.orphans.Load(), Subreaper: r.subreaper}
}

// StartReaper installs the reaper now rather than on the first Start, so a
// PID 1 reaps orphans from its first instant.
func StartReaper() { getReaper() }
