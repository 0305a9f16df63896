package proc

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper is the process-wide owner of wait4. See the package doc.
type reaper struct {
	// mu guards everything below it. It is held for map operations and
	// for one wait4(WNOHANG) call, never across a fork or an exec.
	mu     sync.Mutex
	owners map[int]*Process

	// spawns are the Starts between subscribe and register/abandon,
	// each with the value of reaped when it subscribed.
	spawns  map[*spawn]struct{}
	reaped  uint64           // exits reaped so far: a sequence for held exits
	held    map[int]heldExit // exits of unknown pids that an in-flight spawn may own
	claimed []claimedExit    // exits claimed by register, for the reaper goroutine to deliver
	orphans atomic.Uint64
	// subreaper records whether this process is PID 1 or a child
	// subreaper, i.e. whether orphans of its descendants come back to it.
	subreaper bool
	kick      chan os.Signal
}

// spawn is one Start's subscription: exits reaped after it (seq > since)
// of pids nobody owns are held, since they may be its child's.
type spawn struct{ since uint64 }

type heldExit struct {
	Exit
	seq uint64
}

type claimedExit struct {
	p *Process
	e Exit
}

// goExecFailedStatus is the exit status of a child of syscall.ForkExec
// whose exec failed: the syscall package's child writes the errno to
// ForkExec and calls exit(253).
const goExecFailedStatus = 253

var (
	theReaper     *reaper
	theReaperOnce sync.Once
)

func newReaper() *reaper {
	return &reaper{
		owners: make(map[int]*Process),
		spawns: make(map[*spawn]struct{}),
		held:   make(map[int]heldExit),
		kick:   make(chan os.Signal, 1),
	}
}

// getReaper starts the reaper on first use. An implicit start (the first
// Start or Stats) does not make the process a child subreaper: that changes
// where the orphans of every descendant go, which is the program's choice
// (StartReaper, StartReaperAs), not a side effect of starting a process.
func getReaper() *reaper {
	installReaper(false)
	return theReaper
}

// installReaper starts the reaper unless it runs already, and reports
// whether this call started it. subreaper says whether a process that is
// not PID 1 becomes a child subreaper.
func installReaper(subreaper bool) (installed bool) {
	theReaperOnce.Do(func() {
		installed = true
		r := newReaper()
		r.subreaper = os.Getpid() == 1
		if !r.subreaper && subreaper {
			// Orphans of our descendants must come to us, not to the
			// host's init, or they could never be reaped (or killed) here.
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err == nil {
				r.subreaper = true
			}
		}
		if os.Getpid() == 1 {
			// Only PID 1 can be given a child while it has none: a
			// process that entered its PID namespace from outside
			// (setns, as `docker exec` does) and ends leaves its children
			// to PID 1. A subreaper's orphans come from its descendants,
			// and without a child it has none; any other new child is a
			// fork of its own, which register announces. So only PID 1
			// pays for SIGCHLD: os/signal wakes a goroutine for every
			// exit, and under a stream of restarts that was a tenth of
			// podsup's context switches (docs/benchmarks.md).
			signal.Notify(r.kick, syscall.SIGCHLD)
		}
		handOnNoInheritedIgnore()
		go r.loop()
		theReaper = r
		// Before any start, while podsup's fd numbers are low: a
		// child dups onto numbers above every fd it is given.
		_, _ = sharedDevNull()
	})
	return installed
}

// inheritedIgnore is where SIGHUP and SIGINT go when this process was
// started ignoring them (handOnNoInheritedIgnore). Nothing reads it.
var inheritedIgnore = make(chan os.Signal, 1)

// handOnNoInheritedIgnore keeps a SIG_IGN this process inherited for
// SIGHUP or SIGINT (nohup, a shell's background job) from reaching the
// processes it starts. Go respects such an inherited SIG_IGN for these two
// signals alone, installing no handler, and an ignored signal survives
// fork and exec: every process started here would have begun deaf to
// them, where systemd and kubelet start every process with the default.
// Asked for through os/signal, they are the runtime's to handle, and its
// fork resets what it handles to the default in the child. This process
// goes on ignoring them in effect: os/signal drops what a full channel
// cannot take, and nothing reads this one.
func handOnNoInheritedIgnore() {
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(inheritedIgnore, sig)
		}
	}
}

// loop reaps exits as they happen. It waits in the kernel: waitid
// without WNOHANG blocks this goroutine's thread until a child has
// exited, and the kernel wakes that thread itself. Waking it through
// SIGCHLD instead (the runtime's handler, os/signal's goroutine, then this
// one) added two goroutine hand-offs to every exit, a fifth of what a
// restart cost above the fork+exec floor (docs/benchmarks.md, S1). When it had
// no child at all to wait for, register wakes the loop, and so does
// SIGCHLD in PID 1, to which a process may be reparented without one (see
// installReaper).
func (r *reaper) loop() {
	for {
		p, e, st := r.reapOne(true)
		switch st {
		case reapedOne:
			if p != nil {
				p.exited(e)
			}
		case noChildren:
			<-r.kick
		}
	}
}

// reapState is what one reapOne call found.
type reapState int

const (
	reapedOne  reapState = iota // an exit was reaped (its owner may be nil)
	noneExited                  // children run, none has exited (WNOHANG only)
	noChildren                  // ECHILD: nothing to wait for
)

// reapOne reaps one exit and returns its owner, or nil when it is held or
// counted as an orphan, or was taken by someone else. With block it waits
// for an exit when children run but none has exited.
//
// It first finds an exited child without reaping it (waitid with
// WNOWAIT), outside mu: that call scans every child in the kernel (and
// may wait), and with ten thousand children it took long enough for the
// Go scheduler to hand this goroutine's P away, leaving it queued behind
// every runnable goroutine while it held mu, and every signal waited on
// mu (10,000 processes stopping at once took 13 s). Then, under mu, it
// reaps that pid alone (wait4 of one pid is a lookup, not a scan) and
// files the exit, so that reaping and filing stay one step for a spawner:
// when ForkExec's own wait for a failed child finds it already reaped
// (ECHILD), the exit is filed before the spawner can take mu and look for
// it.
func (r *reaper) reapOne(block bool) (*Process, Exit, reapState) {
	flags := unix.WEXITED | unix.WNOWAIT | unix.WALL
	if !block {
		flags |= unix.WNOHANG
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, flags, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, Exit{}, noChildren
		}
		break
	}
	pid := siginfoPid(&info)
	if pid <= 0 {
		return nil, Exit{}, noneExited
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ws unix.WaitStatus
	var ru unix.Rusage
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, &ru)
	for err == unix.EINTR {
		got, err = unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, &ru)
	}
	if err != nil || got != pid {
		// ForkExec reaped its failed child between the two calls: not an
		// exit of ours; look again.
		return nil, Exit{}, reapedOne
	}
	e := Exit{Pid: pid, Status: ws, Rusage: ru, Time: time.Now()}
	return r.file(e), e, reapedOne
}

// siginfoPid is si_pid of a siginfo_t that waitid filled: the first field
// of the union after si_signo, si_errno and si_code, which the kernel
// aligns as a pointer (offset 16 on 64-bit systems, 12 on 32-bit ones).
func siginfoPid(info *unix.Siginfo) int {
	const word = unsafe.Sizeof(uintptr(0))
	off := (12 + word - 1) &^ (word - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// file records a reaped exit, with mu held: it returns the pid's owner, or
// nil after counting the exit as an orphan or holding it for a spawn in
// flight.
func (r *reaper) file(e Exit) *Process {
	pid := e.Pid
	r.reaped++
	if p := r.owners[pid]; p != nil {
		delete(r.owners, pid)
		return p
	}
	if len(r.spawns) == 0 {
		r.orphans.Add(1)
		return nil
	}
	// A spawn in flight may be this pid's owner: its exec finished and
	// the child exited before Start could register the pid.
	if _, ok := r.held[pid]; ok {
		// The pid was reused while a spawn was in flight. A spawn that got
		// this pid got it for the newer process; the older exit is
		// counted now (it could be a spawn's only if pids wrapped around
		// twice within one exec).
		r.orphans.Add(1)
	}
	r.held[pid] = heldExit{Exit: e, seq: r.reaped}
	if len(r.held) > maxHeld {
		r.evictOldestHeld()
	}
	return nil
}

// maxHeld bounds the exits held for spawns in flight. A spawn stuck in
// exec for days (a hung network filesystem) must not make every orphan
// reaped meanwhile a permanent entry. The exit a spawn claims is its own
// child's, reaped in the moment between the child's exit and the spawn's
// registration, so it is always among the newest: only thousands of
// orphans ending within that moment could push it out.
const maxHeld = 4096

// evictOldestHeld counts the oldest held exit as an orphan.
func (r *reaper) evictOldestHeld() {
	oldest, first := 0, true
	for pid, h := range r.held {
		if first || h.seq < r.held[oldest].seq {
			oldest, first = pid, false
		}
	}
	delete(r.held, oldest)
	r.orphans.Add(1)
}

// deliverClaimed hands exits claimed by register to their owners, on a
// goroutine of its own (the reaper's may be waiting in the kernel).
func (r *reaper) deliverClaimed() {
	r.mu.Lock()
	claimed := r.claimed
	r.claimed = nil
	r.mu.Unlock()
	for _, c := range claimed {
		c.p.exited(c.e)
	}
}

// subscribe declares a fork about to happen. Call it before the fork and
// end the subscription with register or abandon: until then, exits of
// unknown pids are held instead of being counted as orphans.
func (r *reaper) subscribe() *spawn {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &spawn{since: r.reaped}
	r.spawns[s] = struct{}{}
	return s
}

// register ends s after a successful fork+exec: p (with pid and pidfd
// set) owns its pid's exit. If the reaper already collected that exit, it
// is delivered now (through the reaper goroutine).
func (r *reaper) register(s *spawn, p *Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endSpawn(s)
	h, ok := r.held[p.pid]
	if ok && h.seq > s.since && reapedPidfd(p.pidfd) {
		delete(r.held, p.pid)
		r.claimed = append(r.claimed, claimedExit{p, h.Exit})
		go r.deliverClaimed()
	} else {
		r.owners[p.pid] = p
		// A reaper that found no child to wait for waits for this.
		select {
		case r.kick <- syscall.SIGCHLD:
		default:
		}
	}
	r.settleHeld()
}

// abandon ends s after a failed fork or exec. ForkExec waits for a child
// whose exec failed, but the reaper may have collected it first; that exit
// is dropped here rather than counted as an orphan. Its pid is unknown
// (ForkExec returns 0), so it is recognised by when it was reaped (while s
// was in flight) and by its status, 253.
func (r *reaper) abandon(s *spawn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endSpawn(s)
	var (
		pid   int
		found bool
		first uint64
	)
	for hp, h := range r.held {
		if h.seq > s.since && h.Status.Exited() && h.Status.ExitStatus() == goExecFailedStatus && (!found || h.seq < first) {
			pid, found, first = hp, true, h.seq
		}
	}
	if found {
		delete(r.held, pid)
	}
	r.settleHeld()
}

func (r *reaper) endSpawn(s *spawn) { delete(r.spawns, s) }

// owns reports whether p is registered: started and not yet reaped.
func (r *reaper) owns(p *Process) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owners[p.pid] == p
}

// settleHeld counts as orphans the held exits that no spawn still in
// flight can own: those reaped before the oldest of them subscribed.
func (r *reaper) settleHeld() {
	if len(r.held) == 0 {
		return
	}
	oldest, any := uint64(0), false
	for s := range r.spawns {
		if !any || s.since < oldest {
			oldest, any = s.since, true
		}
	}
	for pid, h := range r.held {
		if !any || h.seq <= oldest {
			delete(r.held, pid)
			r.orphans.Add(1)
		}
	}
}

// reapedPidfd reports whether the process behind pidfd has been reaped:
// signal 0 then answers ESRCH. A held exit of the pid a spawn just got is
// that spawn's child's only if the child is gone; a live child means the
// held exit was an earlier process with the same pid. Without a pidfd
// (kernels before 5.3) the pid is trusted.
func reapedPidfd(pidfd int) bool {
	if pidfd < 0 {
		return true
	}
	return unix.PidfdSendSignal(pidfd, 0, nil, 0) == unix.ESRCH
}

// ReaperStats describes the reaper's work so far.
type ReaperStats struct {
	// Tracked is the number of started processes still running.
	Tracked int
	// Orphans is the number of exits reaped that nobody here started.
	// An exit reaped while a Start is between fork and registration is
	// counted once that Start has shown it is not its own.
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
// PID 1 reaps orphans from its first instant, and, unless it runs already,
// makes this process a child subreaper: it is StartReaperAs(true).
func StartReaper() { installReaper(true) }

// StartReaperAs installs the reaper now, as StartReaper, and lets the
// caller choose whether this process, when it is not PID 1, becomes a
// child subreaper (PR_SET_CHILD_SUBREAPER): orphans of its descendants
// then come back to it and are reaped (and counted) here rather than by
// the host's init. The reaper is process-wide and installed once: the
// choice is taken only by the call that installs it (this one, StartReaper,
// which chooses a subreaper, or the first Start or Stats, which do not), and
// installed reports whether it was this call. A program that wants the
// choice to be its own calls this before anything starts a process.
func StartReaperAs(subreaper bool) (installed bool) { return installReaper(subreaper) }
