package cgroups

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Ready keeps open what every restart of a Process cgroup's process reads
// or forks through: its cgroup2 directory (the placement's fd) and its
// cgroup.events (the post-exit check that the tree is empty). It is for a
// process restarted at once after each exit, whose restart would
// otherwise open both anew: an open of a cgroup file right after an exit
// costs 10–15 µs, a read of one kept open 2–3 (docs/benchmarks.md). It
// costs two fds for as long as it is kept.
//
// Only cgroup2 alone is covered: a process cgroup in v1 hierarchies too
// forks through their tasks files, which OpenPlacement opens; OpenReady
// answers ErrNotReady there.
type Ready struct {
	// mu keeps Close from closing an fd under a dup or a read.
	mu     sync.RWMutex
	dir    int // -1 once closed
	events int
	name   string
}

// ErrNotReady says a cgroup's files cannot be kept ready: no cgroup2, or
// v1 hierarchies too, or podsup's own leaf.
var ErrNotReady = errors.New("the cgroup's files cannot be kept open for its restarts (cgroup2 alone only)")

// OpenReady opens p's directory and cgroup.events for its restarts.
func (p *Process) OpenReady() (*Ready, error) {
	hs := p.hiers()
	if p.m.v2 == nil || len(hs) != 1 || hs[0] != p.m.v2 || p.rel == supervisorLeaf {
		return nil, ErrNotReady
	}
	dir := p.dir(p.m.v2)
	dfd, err := openFile(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	efd, err := openFile(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY)
	if err != nil {
		_ = unix.Close(dfd) // a directory: nothing to lose
		return nil, err
	}
	return &Ready{dir: dfd, events: efd, name: dir}, nil
}

// Placement is a placement into the cgroup through a duplicate of the
// kept directory fd (one dup instead of an open): the caller closes it
// after the fork, as any.
func (r *Ready) Placement(p *Process) (*Placement, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.dir < 0 {
		return nil, fmt.Errorf("placement into %s: %w", r.name, unix.EBADF)
	}
	fd, err := ignoringEINTR(func() (int, error) { return unix.FcntlInt(uintptr(r.dir), unix.F_DUPFD_CLOEXEC, 0) })
	if err != nil {
		return nil, fmt.Errorf("placement into %s: %w", r.name, err)
	}
	return &Placement{m: p.m, rel: p.rel, dir: fd}, nil
}

// TreeEmpty reports whether cgroup.events says "populated 0", from one
// read of the kept file; false when it cannot be read.
func (r *Ready) TreeEmpty() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.events < 0 {
		return false
	}
	var buf [256]byte
	n, err := ignoringEINTR(func() (int, error) { return unix.Pread(r.events, buf[:], 0) })
	if err != nil {
		return false
	}
	populated, err := parseKeyed(buf[:n], r.name+"/cgroup.events", "populated")
	return err == nil && populated == 0
}

// Close closes the kept files; later calls do nothing.
func (r *Ready) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dir >= 0 {
		_ = unix.Close(r.dir) // read-only handles: nothing to lose
		_ = unix.Close(r.events)
		r.dir, r.events = -1, -1
	}
}
