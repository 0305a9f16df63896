package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// eventsWatch is a cgroup2 cgroup's cgroup.events opened to be waited on.
// The kernel wakes a poll of that file whenever one of its values changes
// ("populated" among them), so a kill that waits for a tree to empty
// learns of it when it happens, where it would otherwise look again after
// a sleep. It waits in Go's poller, not in a blocking system call, so
// that many kills waiting at once (a sandbox of a thousand processes
// being deleted) hold no thread each.
//
// Every wait has a deadline, the sleep it replaces, so it never lasts
// longer than that sleep would have. The kernel sends at most one
// notification per file every 10 ms (CGROUP_FILE_NOTIFY_MIN_INTV) and
// holds one due sooner until then: such a change is seen at the end of
// that interval or at the deadline, whichever comes first.
type eventsWatch struct {
	f    *os.File
	rc   syscall.RawConn
	file string
}

// watchEvents opens file, a cgroup.events, for waiting; nil when it
// cannot be waited on (it could not be opened, or Go's poller refused
// it), and the caller sleeps instead.
func watchEvents(file string) *eventsWatch {
	fd, err := openFile(file, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), file) // non-blocking: into Go's poller
	rc, err := f.SyscallConn()
	// SetReadDeadline fails for a file the poller did not take: its waits
	// would return at once.
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		_ = f.Close() // read-only: nothing to lose
		return nil
	}
	return &eventsWatch{f: f, rc: rc, file: file}
}

// populated reads the file's "populated" (1 while anything runs in the
// cgroup or below).
func (w *eventsWatch) populated() (uint64, error) { return w.value("populated") }

// value reads the file from its start, through the watched open file, and
// returns key's value: a read is also what the kernel measures the next
// change from.
func (w *eventsWatch) value(key string) (uint64, error) {
	var (
		buf  [256]byte
		n    int
		rerr error
	)
	if err := w.rc.Control(func(fd uintptr) {
		n, rerr = ignoringEINTR(func() (int, error) { return unix.Pread(int(fd), buf[:], 0) })
	}); err != nil {
		return 0, err
	}
	if rerr != nil {
		if errors.Is(rerr, unix.ENODEV) {
			// The cgroup was removed since the open: nothing runs in it.
			return 0, &os.PathError{Op: "read", Path: w.file, Err: os.ErrNotExist}
		}
		return 0, &os.PathError{Op: "read", Path: w.file, Err: rerr}
	}
	return parseKeyed(buf[:n], w.file, key)
}

// wait returns once the file changed since its last read, or after d,
// whichever comes first. The first wait after the open may return at once
// (the poller reports the file ready when it takes it): the caller reads
// again and waits again, as after any change.
func (w *eventsWatch) wait(d time.Duration) {
	if w.f.SetReadDeadline(time.Now().Add(d)) != nil {
		time.Sleep(d)
		return
	}
	asked := false
	_ = w.rc.Read(func(uintptr) bool {
		if !asked {
			asked = true
			return false // wait for the poller to report a change
		}
		return true
	}) // a deadline reached is the sleep's end: no error to report
}

func (w *eventsWatch) close() { _ = w.f.Close() } // read-only: nothing to lose

// lazyEventsWatch is the watch of a kill's waits between its rounds,
// opened at the first wait: a tree found empty at once (the usual case
// after a process exited) costs no more than one read.
type lazyEventsWatch struct {
	file string // "": no cgroup2 cgroup to watch; the waits sleep
	// emptyEnds says that a tree empty in cgroup2 needs no more rounds:
	// false where a process may sit in a v1 cgroup alone, which cgroup2
	// does not see; a wait then sleeps when cgroup2 says empty.
	emptyEnds bool
	w         *eventsWatch
	opened    bool
}

// watchAfterFirstRound returns the waits of a kill of n's tree: on its
// cgroup2 cgroup.events where there is one. The v2 cgroup lists the
// whole tree wherever podsup placed it (CLONE_INTO_CGROUP); a process
// that sits in a v1 cgroup alone is not seen there, and a wait for it
// ends with its sleep, as before. v2Only says the kill itself looks at
// cgroup2 alone (killV2), or n lives in no v1 hierarchy.
func (n *node) watchAfterFirstRound(v2Only bool) *lazyEventsWatch {
	l := &lazyEventsWatch{}
	if n.m.v2 != nil && n.rel != supervisorLeaf {
		hs := n.hiers()
		l.file = filepath.Join(n.dir(n.m.v2), "cgroup.events")
		l.emptyEnds = v2Only || (len(hs) == 1 && hs[0] == n.m.v2)
	}
	return l
}

// waitEmptyOrSleep waits up to d between two rounds of a kill: until
// cgroup.events says the tree is empty or changes, or, without a watch,
// for d.
func (l *lazyEventsWatch) waitEmptyOrSleep(d time.Duration) {
	if !l.opened && l.file != "" {
		l.opened = true
		l.w = watchEvents(l.file)
	}
	if l.w == nil {
		time.Sleep(d)
		return
	}
	switch p, err := l.w.populated(); {
	case err != nil || (p == 0 && !l.emptyEnds):
		time.Sleep(d)
	case p == 0:
		// The next round looks again, and ends.
	default:
		l.w.wait(d)
	}
}

func (l *lazyEventsWatch) close() {
	if l.w != nil {
		l.w.close()
	}
}
