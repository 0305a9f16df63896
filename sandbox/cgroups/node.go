package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// node is one cgroup of the tree: the same relative path in every
// hierarchy in use.
type node struct {
	m   *Manager
	rel string // "web", "web/api"
	// hs are the hierarchies the cgroup exists in; nil means all the
	// Manager uses (see Manager.NewGroup for when a group has fewer).
	hs []*hier
}

// hiers are the hierarchies the cgroup exists in, the v2 one (if any)
// first.
func (n *node) hiers() []*hier {
	if n.hs != nil {
		return n.hs
	}
	return n.m.hiers
}

// ctl is the hierarchy serving controller c for this cgroup, or nil when
// the cgroup is not in it.
func (n *node) ctl(c string) *hier {
	h := n.m.ctl[c]
	if h == nil || !slices.Contains(n.hiers(), h) {
		return nil
	}
	return h
}

// Group is the cgroup of one group; it holds the limits and the process
// cgroups. No process is ever placed in a Group itself.
type Group struct {
	node
}

// Process is the cgroup of one process of a group (and of everything that
// process forks). Children are placed here with a Placement.
type Process struct {
	node
}

func (n *node) dir(h *hier) string { return filepath.Join(h.base, filepath.FromSlash(n.rel)) }

// Path is the cgroup's directory in the first hierarchy (v2 when there is
// one). It is what Kill and Procs act on there.
func (n *node) Path() string { return n.dir(n.hiers()[0]) }

// Dirs are the cgroup's directories in every hierarchy in use.
func (n *node) Dirs() []string {
	hs := n.hiers()
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = n.dir(h)
	}
	return out
}

// create makes the directory in every hierarchy, undoing them all on error.
func (n *node) create() error {
	hs := n.hiers()
	for i, h := range hs {
		d := n.dir(h)
		if err := n.m.fs.mkdir(d); err != nil {
			for _, done := range hs[:i] {
				_ = n.m.fs.rmdir(n.dir(done)) // undo; just created, empty
			}
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("creating cgroup %s: %w", d, ErrExist)
			}
			return fmt.Errorf("creating cgroup %s: %w", d, err)
		}
	}
	return nil
}

// NewProcess creates the cgroup of process name inside the group.
func (g *Group) NewProcess(name string) (*Process, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	p := &Process{node{m: g.m, rel: g.rel + "/" + name, hs: g.hs}}
	if err := p.create(); err != nil {
		return nil, err
	}
	return p, nil
}

// Delete removes the group's cgroup and its process cgroups. See
// node.Delete; the Manager forgets the group's name.
func (g *Group) Delete() error {
	err := g.node.Delete()
	if err == nil {
		g.m.forget(g)
	}
	return err
}

// SetResources writes r's limits (zero fields: unlimited) to the group. It
// may be called again to change them.
func (g *Group) SetResources(r spec.Resources) error {
	return g.setResources(r, "the group was created without them; create it anew")
}

// SetResources writes r's limits (zero fields: unlimited) to the process's
// own cgroup, within its group's: Kubernetes' per-container limits under
// the pod's. It may be called again to change them.
func (p *Process) SetResources(r spec.Resources) error {
	return p.setResources(r, "its group was created without them: give the group's resources a limit of that kind too, or none")
}

func (n *node) setResources(r spec.Resources, fix string) error {
	if err := n.m.Check(r); err != nil {
		return fmt.Errorf("setting limits of %s: %w", n.Path(), err)
	}
	if err := n.check(r); err != nil {
		return fmt.Errorf("setting limits of %s: %w (%s)", n.Path(), err, fix)
	}
	for _, w := range n.limitWrites(r) {
		if err := w.apply(n.m.fs); err != nil {
			return fmt.Errorf("setting limits of %s: %w", n.Path(), err)
		}
	}
	return nil
}

// check is Manager.Check for the hierarchies the cgroup lives in.
func (n *node) check(r spec.Resources) error {
	var missing []string
	need := func(c string, want bool) {
		if want && n.ctl(c) == nil {
			missing = append(missing, c)
		}
	}
	need("memory", r.Memory > 0)
	need("cpu", r.CPU > 0 || r.CPUWeight > 0)
	need("pids", r.Pids > 0)
	if len(missing) > 0 {
		return missingControllers(missing)
	}
	return nil
}

// Procs lists every process in the cgroup and the cgroups below it, in
// every hierarchy in use, sorted; podsup's own pid is left out (a spawning
// thread sits in a child's v1 cgroups for the moment of a fork).
func (n *node) Procs() ([]int, error) {
	pids, _, err := n.procs()
	return pids, err
}

// procs is Procs plus whether podsup itself was listed.
func (n *node) procs() (pids []int, selfInside bool, err error) {
	self := os.Getpid()
	seen := map[int]bool{}
	for _, h := range n.hiers() {
		top := n.dir(h)
		dirs, err := subdirs(top)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, false, fmt.Errorf("listing processes of %s: %w", top, err)
		}
		for _, d := range append(dirs, top) {
			list, err := readPids(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue // removed meanwhile, or absent in this hierarchy
				}
				return nil, false, fmt.Errorf("listing processes of %s: %w", d, err)
			}
			for _, pid := range list {
				if pid == self {
					selfInside = true
					continue
				}
				seen[pid] = true
			}
		}
	}
	for pid := range seen {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, selfInside, nil
}

// TryDelete removes the cgroup if the kernel lets it, with one rmdir and
// nothing else: an rmdir succeeds only on a cgroup with no process and no
// child, so a cgroup it removed had nothing left to kill. gone is false,
// with no error, when the cgroup is still populated (EBUSY), and also
// where one rmdir cannot tell (a cgroup in v1 hierarchies too, podsup's
// own leaf): then nothing was done, and KillTree and Delete remain the
// way. A cgroup already gone is gone.
func (n *node) TryDelete() (gone bool, err error) {
	hs := n.hiers()
	if n.m.v2 == nil || len(hs) != 1 || hs[0] != n.m.v2 || n.rel == supervisorLeaf {
		return false, nil
	}
	dir := n.dir(n.m.v2)
	switch err := n.m.fs.rmdir(dir); {
	case err == nil || errors.Is(err, os.ErrNotExist):
		return true, nil
	case errors.Is(err, unix.EBUSY):
		return false, nil
	default:
		return false, fmt.Errorf("removing %s: %w", dir, err)
	}
}

// Delete removes the cgroup, children first, in every hierarchy. It does
// not kill (call Kill first) but retries for a while (Options.Timeout)
// while the kernel still lists exiting tasks, then fails with ErrBusy. A
// cgroup already gone is not an error, so Delete may be called twice.
func (n *node) Delete() error {
	deadline := time.Now().Add(n.m.timeout)
	var errs []error
	for _, h := range n.hiers() {
		if err := n.m.removeTree(n.dir(h), deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// A compile-time check that both kinds answer the same questions.
var _ = []interface {
	Path() string
	Procs() ([]int, error)
	Kill() error
	Delete() error
}{&Group{}, &Process{}}
