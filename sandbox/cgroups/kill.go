package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Kill sends SIGKILL to every process in the cgroup and below, and returns
// once the kernel lists none; after Options.Timeout it gives up with
// ErrBusy (a process stuck in the kernel, say). Exited processes may stay
// zombies until podsup's reaper collects them: the kernel no longer lists
// them, and they hold no resources that matter.
//
// Mechanism, in order of preference, repeated until the tree is empty:
// cgroup.kill (v2, atomic against forks); freeze (v2 cgroup.freeze or v1
// freezer.state), SIGKILL every listed pid, thaw; or, without a freezer,
// SIGKILL every listed pid (a fork racing it is caught the next round).
// Rounds after the first also signal every listed pid, which reaches a
// process that sits only in a v1 cgroup. Between rounds it waits for the
// kernel's notification that the cgroup2 tree changed (eventsWatch), for
// at most the time it would otherwise sleep: 1 ms, doubling to 20 ms.
// Only v1 alone has no such notification, and there it sleeps.
func (n *node) Kill() error {
	if n.emptyV2Only() {
		return nil
	}
	deadline := time.Now().Add(n.m.timeout)
	delay := time.Millisecond
	w := n.watchAfterFirstRound(false)
	defer w.close()
	for round := 0; ; round++ {
		pids, selfInside, err := n.procs()
		if err != nil {
			return fmt.Errorf("killing %s: %w", n.Path(), err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("killing %s: %w: pids %v", n.Path(), ErrBusy, pids)
		}
		if err := n.killRound(pids, selfInside, round); err != nil {
			return fmt.Errorf("killing %s: %w", n.Path(), err)
		}
		w.waitEmptyOrSleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

func (n *node) killRound(pids []int, selfInside bool, round int) error {
	// With podsup itself inside (its supervisor leaf), neither
	// cgroup.kill nor a freeze may be used: only pid-by-pid signals.
	if selfInside {
		return n.signalListed(pids, unix.SIGKILL)
	}
	if v2 := n.m.v2; v2 != nil {
		killFile := filepath.Join(n.dir(v2), "cgroup.kill")
		if exists(killFile) {
			if err := n.m.fs.write(killFile, "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if round == 0 {
				return nil
			}
			return n.signalListed(pids, unix.SIGKILL)
		}
	}
	if fz := n.freezer(); fz != nil {
		return n.freezeKillThaw(fz)
	}
	return n.signalListed(pids, unix.SIGKILL)
}

// Signal sends sig to every process listed in the tree now (a snapshot: a
// process forked meanwhile may miss it; for certainty use Kill).
func (n *node) Signal(sig syscall.Signal) error {
	pids, _, err := n.procs()
	if err != nil {
		return fmt.Errorf("signalling %s: %w", n.Path(), err)
	}
	return n.signalListed(pids, sig)
}

// KillTree is Kill for SIGKILL and Signal otherwise; it matches the tree
// killer interface of package proc (TreeKiller).
//
// Where the cgroup2 hierarchy is in use, KillTree's SIGKILL looks at v2
// alone: every process podsup starts is created in its v2 cgroup
// (CLONE_INTO_CGROUP) and its descendants stay in that subtree, so v2
// lists the whole tree and the v1 hierarchies only carry controllers. An
// empty tree, the usual case after a process exited, then costs one read
// of cgroup.events.
//
// It never writes cgroup.kill: Linux (seen on 6.18, docs/benchmarks.md)
// SIGKILLs every child created later with CLONE_INTO_CGROUP in a cgroup
// that was once killed that way, and a Process cgroup is kept for the
// next instance of its process. It freezes the tree, signals every
// listed process and thaws instead. Kill, which deleting a cgroup relies
// on, uses cgroup.kill and also walks every v1 hierarchy.
func (n *node) KillTree(sig syscall.Signal) error {
	if sig != unix.SIGKILL {
		return n.Signal(sig)
	}
	if done, err := n.killV2(); done {
		return err
	}
	return n.Kill()
}

// emptyV2Only reports whether the cgroup lives in v2 alone and its
// cgroup.events says nothing runs in it or below: one read instead of a
// walk of every child's cgroup.procs (a group of a hundred processes
// being deleted). With v1 hierarchies in use a process may sit in one of
// them only, so the walk stays.
func (n *node) emptyV2Only() bool {
	hs := n.hiers()
	if n.m.v2 == nil || len(hs) != 1 || hs[0] != n.m.v2 || n.rel == supervisorLeaf {
		return false
	}
	populated, err := readKeyed(filepath.Join(n.dir(n.m.v2), "cgroup.events"), "populated")
	return err == nil && populated == 0
}

// killV2 is KillTree's SIGKILL through v2 alone, repeated until
// cgroup.events says "populated 0". done is false where that does not
// apply (no v2, no cgroup.events, podsup's own leaf): use Kill.
//
// It chases the tree before it freezes it: for the first chaseFor, each
// round SIGKILLs, through pidfds, the listed processes it has not
// signalled yet. A process with SIGKILL pending cannot complete a fork, so
// a tree that does not grow faster than it is listed is dead after a round
// or two, at the cost of a listing and a signal per process; stopping
// thousands of processes at once, a freeze (a write, polls until frozen, a
// thaw) for every one of them was a fifth of podsup's CPU. A tree still
// populated after chaseFor (a fork bomb, or a pid of the tree reused
// within it) is frozen, every listed process signalled, and thawed, each
// round. Between rounds it waits for cgroup.events to change, as Kill
// does.
func (n *node) killV2() (done bool, err error) {
	v2 := n.m.v2
	if v2 == nil || n.rel == supervisorLeaf {
		return false, nil
	}
	dir := n.dir(v2)
	events := filepath.Join(dir, "cgroup.events")
	deadline := time.Now().Add(n.m.timeout)
	delay := time.Millisecond
	signalled := map[int]bool{}
	chaseUntil := time.Now().Add(chaseFor)
	w := n.watchAfterFirstRound(true)
	defer w.close()
	for round := 0; ; round++ {
		populated, err := readKeyed(events, "populated")
		switch {
		case errors.Is(err, os.ErrNotExist) && round == 0 && exists(dir):
			return false, nil // an old kernel without cgroup.events
		case errors.Is(err, os.ErrNotExist):
			return true, nil // removed: nothing left in it
		case err != nil:
			return true, fmt.Errorf("killing %s: %w", dir, err)
		case populated == 0:
			return true, nil
		case time.Now().After(deadline):
			pids, _ := n.Procs()
			return true, fmt.Errorf("killing %s: %w: pids %v", dir, ErrBusy, pids)
		}
		if fz := n.freezer(); fz != nil && time.Now().After(chaseUntil) {
			err = n.freezeKillThaw(fz) // lists the frozen tree itself
		} else {
			var pids []int
			if pids, _, err = n.procs(); err != nil {
				return true, fmt.Errorf("killing %s: %w", dir, err)
			}
			var fresh []int
			for _, pid := range pids {
				if !signalled[pid] {
					fresh = append(fresh, pid)
					signalled[pid] = true
				}
			}
			err = n.signalListed(fresh, unix.SIGKILL)
		}
		if err != nil {
			return true, fmt.Errorf("killing %s: %w", dir, err)
		}
		w.waitEmptyOrSleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// chaseFor is how long killV2 signals new processes one by one before it
// freezes the tree to stop it from growing.
const chaseFor = 100 * time.Millisecond

// signalable is the guard every signal passes: never pid <= 0 (kill(2)
// reads -1 as "everyone", 0 as "my group"), never init, never podsup.
func signalable(pid int) bool {
	return pid > 1 && pid != os.Getpid()
}

// signalListed signals the processes of a listing without trusting pid
// numbers: it opens a pidfd for each, lists the tree again, and signals
// only the pidfds whose pid is still listed. A pid that exited and was
// reused outside the tree in between is not listed the second time; one
// reused inside the tree leaves our pidfd stale (ESRCH) and is caught in
// the next round.
func (n *node) signalListed(pids []int, sig syscall.Signal) error {
	fds := map[int]int{}
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd) // nothing to do about a failed close of a pidfd
		}
	}()
	for _, pid := range pids {
		if !signalable(pid) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // ESRCH: gone already
		}
		fds[pid] = fd
	}
	if len(fds) == 0 {
		return nil
	}
	again, _, err := n.procs()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range again {
		fd, ok := fds[pid]
		if !ok {
			continue
		}
		if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && err != unix.ESRCH {
			errs = append(errs, fmt.Errorf("signalling pid %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// freezer is a cgroup's freeze switch: v2 cgroup.freeze or v1 freezer.state.
type freezer struct {
	file         string
	freeze, thaw string
	frozen       func() bool
	// events is the cgroup2 cgroup.events whose "frozen" says the freeze
	// is done, notified on change (eventsWatch); "" for v1's freezer.
	events string
}

// freezeWait waits for a freeze to be done: on cgroup2 woken by the
// notification of cgroup.events' "frozen", on v1 by sleeping between
// reads of freezer.state, which the kernel does not notify.
type freezeWait struct {
	fz *freezer
	w  *eventsWatch // nil: read fz.frozen and sleep
}

func (fz *freezer) untilFrozen() freezeWait {
	f := freezeWait{fz: fz}
	if fz.events != "" {
		f.w = watchEvents(fz.events)
	}
	return f
}

func (f freezeWait) frozen() bool {
	if f.w == nil {
		return f.fz.frozen()
	}
	v, err := f.w.value("frozen")
	return err == nil && v == 1
}

// wait waits up to d for the freeze to be done: a change of
// cgroup.events since the last frozen, or d.
func (f freezeWait) wait(d time.Duration) {
	if f.w == nil {
		time.Sleep(d)
		return
	}
	f.w.wait(d)
}

func (f freezeWait) close() {
	if f.w != nil {
		f.w.close()
	}
}

func (n *node) freezer() *freezer {
	if v2 := n.m.v2; v2 != nil {
		d := n.dir(v2)
		if exists(filepath.Join(d, "cgroup.freeze")) {
			return &freezer{
				file: filepath.Join(d, "cgroup.freeze"), freeze: "1", thaw: "0",
				frozen: func() bool {
					v, err := readKeyed(filepath.Join(d, "cgroup.events"), "frozen")
					return err == nil && v == 1
				},
				events: filepath.Join(d, "cgroup.events"),
			}
		}
	}
	if h := n.ctl("freezer"); h != nil {
		state := filepath.Join(n.dir(h), "freezer.state")
		return &freezer{
			file: state, freeze: "FROZEN", thaw: "THAWED",
			frozen: func() bool {
				b, err := readFile(state)
				return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
			},
		}
	}
	return nil
}

// freezeKillThaw freezes the tree so nothing in it can fork, signals every
// process listed while frozen, and thaws so the signals are delivered.
func (n *node) freezeKillThaw(fz *freezer) (err error) {
	// No podsup thread is in this cgroup's tree while this is held (see
	// Manager.placeMu): podsup never freezes itself.
	unlock := n.m.lockForFreeze(n.rel)
	defer unlock()
	if err := n.m.fs.write(fz.file, fz.freeze); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("freezing: %w", err)
	}
	defer func() {
		if terr := n.m.fs.write(fz.file, fz.thaw); terr != nil && !errors.Is(terr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("thawing: %w", terr))
		}
	}()
	// A task in uninterruptible sleep keeps the tree FREEZING; past this
	// bound signal anyway, and the next round tries again.
	deadline := time.Now().Add(500 * time.Millisecond)
	until := fz.untilFrozen()
	defer until.close()
	for delay := 100 * time.Microsecond; !until.frozen() && time.Now().Before(deadline); delay = min(2*delay, 10*time.Millisecond) {
		until.wait(delay)
	}
	pids, _, err := n.procs()
	if err != nil {
		return err
	}
	return n.signalListed(pids, unix.SIGKILL)
}

// TreeEmpty reports whether cgroup2 says nothing runs in the cgroup or
// below: the check killV2 makes before its first round, alone, for a
// caller that must not wait for a kill (a restart made on the reaper's
// goroutine). false where that check does not apply (no v2, podsup's own
// leaf) or the file cannot be read: the caller kills the tree as usual.
func (n *node) TreeEmpty() bool {
	v2 := n.m.v2
	if v2 == nil || n.rel == supervisorLeaf {
		return false
	}
	populated, err := readKeyed(filepath.Join(n.dir(v2), "cgroup.events"), "populated")
	return err == nil && populated == 0
}
