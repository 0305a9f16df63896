package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// supervisorLeaf is where podsup moves itself on v2 when it must empty its
// own cgroup to enable controllers (see the package doc). The leading '_'
// keeps it apart from group names, which start with a letter or digit.
const supervisorLeaf = "_supervisor"

// v2Wanted are the controllers podsup enables for its tree on v2.
var v2Wanted = []string{"cpu", "memory", "pids"}

// Options configure a Manager.
type Options struct {
	// Instance names this podsup; the root cgroup is "podsup-<Instance>".
	// Two podsups with different instances never touch each other's
	// cgroups; one with the same instance sweeps the other's away.
	// Required: letters, digits, '.', '_' and '-'.
	Instance string
	// Layout is the hierarchies to use; nil means Detect().
	Layout *Layout
	// Logger gets warnings (e.g. controllers podsup could not enable) and
	// debug notes. The zero value logs nothing.
	Logger zerolog.Logger
	// DisableV2 ignores the cgroup2 hierarchy, as on a pure v1 host: the
	// tests use it to exercise the v1 paths on a hybrid host.
	DisableV2 bool
	// DisableV1 ignores v1 hierarchies.
	DisableV1 bool
	// Timeout bounds how long Kill waits for a tree to empty and Delete
	// retries a cgroup the kernel still holds; zero means 5s.
	Timeout time.Duration
}

// hier is a hierarchy in use and the directory of podsup's root in it.
type hier struct {
	*Hierarchy
	own  string // directory of podsup's own cgroup
	base string // own/podsup-<instance>
}

// Manager owns the cgroup root of one podsup instance. Its methods are safe
// for concurrent use.
type Manager struct {
	log     zerolog.Logger
	fs      fsOps
	timeout time.Duration
	layout  *Layout
	root    string // "podsup-<instance>"

	hiers []*hier          // in use; the v2 one (if any) first
	v2    *hier            // nil without v2
	ctl   map[string]*hier // controller -> the hierarchy serving it

	// moved: podsup moved itself into the supervisor leaf; enabledInOwn:
	// the controllers it then enabled in its own cgroup (Close undoes them
	// only if it must, to move back).
	moved        bool
	enabledInOwn []string

	// placeMu and groupPlace keep podsup's threads out of frozen
	// cgroups (a frozen thread could stall the Go runtime's stop-the-world
	// and with it the goroutine that would thaw it). Placement.Fork holds
	// placeMu shared and its group's lock shared while a thread sits in a
	// child's v1 cgroups; freezing a group or a process cgroup holds
	// placeMu shared and that group's lock exclusively, so it waits only
	// for forks into the same group and never blocks another group's;
	// freezing the root holds placeMu exclusively.
	placeMu    sync.RWMutex
	groupMu    sync.Mutex
	groupPlace map[string]*sync.RWMutex // top-level cgroup name → its lock; guarded by groupMu

	mu     sync.Mutex
	groups map[string]*Group // guarded by mu
	closed bool              // guarded by mu
}

var validInstance = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// New finds the hierarchies, picks a hierarchy for each controller, creates
// the root cgroup (reusing one left by an earlier run; call Sweep next) and
// hands v2 controllers down to it. Errors wrapping ErrUnavailable mean
// cgroups cannot be used here at all.
func New(opts Options) (*Manager, error) {
	return newManager(opts, kernelFS)
}

func newManager(opts Options, fs fsOps) (*Manager, error) {
	if !validInstance.MatchString(opts.Instance) || opts.Instance == "." || opts.Instance == ".." {
		return nil, fmt.Errorf("%w: instance %q: use 1-100 letters, digits, '.', '_' or '-'", ErrInvalidName, opts.Instance)
	}
	m := &Manager{
		log:     opts.Logger,
		fs:      fs,
		timeout: opts.Timeout,
		layout:  opts.Layout,
		root:    "podsup-" + opts.Instance,
		ctl:     map[string]*hier{},
		groups:  map[string]*Group{},
	}
	if m.timeout <= 0 {
		m.timeout = 5 * time.Second
	}
	if m.layout == nil {
		l, err := Detect()
		if err != nil {
			return nil, fmt.Errorf("%w: detecting cgroup hierarchies: %w", ErrUnavailable, err)
		}
		m.layout = l
	}
	if err := m.setup(opts); err != nil {
		m.removeRoots()
		return nil, err
	}
	return m, nil
}

func (m *Manager) newHier(h *Hierarchy) (*hier, error) {
	own, err := h.OwnDir()
	if err != nil {
		return nil, err
	}
	return &hier{Hierarchy: h, own: own, base: filepath.Join(own, m.root)}, nil
}

func (m *Manager) setup(opts Options) error {
	if m.layout.V2 != nil && !opts.DisableV2 {
		h, err := m.newHier(m.layout.V2)
		if err != nil {
			return err
		}
		if err := m.mkdirRoot(h); err != nil {
			return err
		}
		m.v2 = h
		m.hiers = append(m.hiers, h)
		for _, c := range m.enableV2(h) {
			m.ctl[c] = h
		}
	}
	if !opts.DisableV1 {
		v1Wanted := []string{"memory", "cpu", "pids"}
		if m.v2 == nil {
			// Without v2, cpuacct gives CPU usage and the freezer makes
			// Kill race-free.
			v1Wanted = append(v1Wanted, "cpuacct", "freezer")
		}
		for _, c := range v1Wanted {
			if m.ctl[c] != nil {
				continue
			}
			hy := m.layout.V1For(c)
			if hy == nil {
				continue
			}
			if i := slices.IndexFunc(m.hiers, func(x *hier) bool { return x.Hierarchy == hy }); i >= 0 {
				m.ctl[c] = m.hiers[i] // a co-mounted controller (cpu,cpuacct)
				continue
			}
			h, err := m.newHier(hy)
			if err != nil {
				return err
			}
			if err := m.mkdirRoot(h); err != nil {
				return err
			}
			m.hiers = append(m.hiers, h)
			m.ctl[c] = h
		}
	}
	if len(m.hiers) == 0 {
		return fmt.Errorf("%w: no usable cgroup hierarchy is mounted (layout %s)", ErrUnavailable, m.layout.Kind())
	}
	return nil
}

// mkdirRoot creates the root in h; one left by an earlier run is reused.
func (m *Manager) mkdirRoot(h *hier) error {
	err := m.fs.mkdir(h.base)
	switch {
	case err == nil, errors.Is(err, os.ErrExist):
		return nil
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS), errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: creating %s: %w", ErrUnavailable, h.base, err)
	}
	return fmt.Errorf("creating %s: %w", h.base, err)
}

// enableV2 hands the wanted v2 controllers down to the root and returns
// those it managed to; failing leaves podsup without them, not broken.
func (m *Manager) enableV2(h *hier) []string {
	var want []string
	for _, c := range v2Wanted {
		if h.Has(c) {
			want = append(want, c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	ownControl := filepath.Join(h.own, "cgroup.subtree_control")
	have, err := readWords(ownControl)
	if err != nil {
		m.log.Warn().Err(err).Msg("cgroup v2 controllers unused: cannot read own subtree_control")
		return nil
	}
	var missing []string
	for _, c := range want {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		err := m.fs.write(ownControl, controlList('+', missing))
		if errors.Is(err, unix.EBUSY) {
			// Processes in our own cgroup, podsup among them: leave it.
			if err = m.moveSelfIntoLeaf(h); err == nil {
				if err = m.fs.write(ownControl, controlList('+', missing)); err != nil {
					m.moveSelfBack(h)
				}
			}
		}
		if err != nil {
			m.log.Warn().Err(err).Strs("controllers", missing).Str("cgroup", h.own).
				Msg("cannot enable cgroup v2 controllers in podsup's own cgroup; going on without them")
			want = slices.DeleteFunc(want, func(c string) bool { return slices.Contains(missing, c) })
		} else {
			m.enabledInOwn = missing
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := m.fs.write(filepath.Join(h.base, "cgroup.subtree_control"), controlList('+', want)); err != nil {
		m.log.Warn().Err(err).Strs("controllers", want).Msg("cannot enable cgroup v2 controllers in podsup's root; going on without them")
		return nil
	}
	return want
}

// controlList is the subtree_control syntax: "+cpu +memory".
func controlList(sign byte, ctrls []string) string {
	parts := make([]string, len(ctrls))
	for i, c := range ctrls {
		parts[i] = string(sign) + c
	}
	return strings.Join(parts, " ")
}

func (m *Manager) moveSelfIntoLeaf(h *hier) error {
	leaf := filepath.Join(h.base, supervisorLeaf)
	if err := m.fs.mkdir(leaf); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating supervisor leaf: %w", err)
	}
	if err := m.fs.write(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		_ = m.fs.rmdir(leaf) // best effort; Close retries
		return fmt.Errorf("moving podsup into %s: %w", leaf, err)
	}
	m.moved = true
	m.log.Debug().Str("cgroup", leaf).Msg("moved podsup into a leaf cgroup to enable v2 controllers")
	return nil
}

// moveSelfBack returns podsup to its own cgroup. The kernel refuses while
// that cgroup hands domain controllers down (no internal processes), so
// the controllers podsup enabled there are disabled first if needed.
func (m *Manager) moveSelfBack(h *hier) {
	if !m.moved {
		return
	}
	procs := filepath.Join(h.own, "cgroup.procs")
	self := strconv.Itoa(os.Getpid())
	err := m.fs.write(procs, self)
	if errors.Is(err, unix.EBUSY) && len(m.enabledInOwn) > 0 {
		if derr := m.fs.write(filepath.Join(h.own, "cgroup.subtree_control"), controlList('-', m.enabledInOwn)); derr != nil {
			m.log.Debug().Err(derr).Msg("cannot disable controllers in own cgroup")
		}
		err = m.fs.write(procs, self)
	}
	if err != nil {
		m.log.Warn().Err(err).Msg("cannot move podsup back to its own cgroup; its supervisor leaf stays")
		return
	}
	m.moved = false
	m.enabledInOwn = nil
	if err := m.rmdirRetry(filepath.Join(h.base, supervisorLeaf)); err != nil {
		m.log.Warn().Err(err).Msg("cannot remove supervisor leaf")
	}
}

// removeRoots removes the (empty) root in every hierarchy; undoing a
// failed New, or the last step of Close.
func (m *Manager) removeRoots() error {
	var errs []error
	if m.v2 != nil {
		m.moveSelfBack(m.v2)
	}
	for _, h := range m.hiers {
		if err := m.rmdirRetry(h.base); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes one cgroup directory, retrying while the kernel still
// lists a task that is exiting (EBUSY). A missing directory is fine.
func (m *Manager) rmdirRetry(dir string) error {
	return m.rmdirUntil(dir, time.Now().Add(m.timeout))
}

// removeTree removes dir and every cgroup below it, children first, each
// with rmdirUntil. It tries dir's rmdir before it lists anything: a
// process's cgroup seldom has children, and listing one (its control files
// are most of its entries) cost about as much as removing it, for each of
// a group's processes when the group goes.
func (m *Manager) removeTree(dir string, deadline time.Time) error {
	err := m.fs.rmdir(dir)
	switch {
	case err == nil || errors.Is(err, os.ErrNotExist):
		return nil
	case !errors.Is(err, unix.EBUSY):
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	children, err := childDirs(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	for _, child := range children {
		if err := m.removeTree(child, deadline); err != nil {
			return err
		}
	}
	return m.rmdirUntil(dir, deadline)
}

func (m *Manager) rmdirUntil(dir string, deadline time.Time) error {
	delay := time.Millisecond
	for {
		err := m.fs.rmdir(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			if errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("removing %s: %w: %w", dir, ErrBusy, err)
			}
			return fmt.Errorf("removing %s: %w", dir, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// Layout is the hierarchies the Manager found.
func (m *Manager) Layout() *Layout { return m.layout }

// Controllers maps each controller podsup uses to the cgroup version that
// provides it (e.g. on these hybrid machines: memory 1, cpu 1, pids 1).
func (m *Manager) Controllers() map[string]int {
	out := map[string]int{}
	for c, h := range m.ctl {
		out[c] = h.Version
	}
	return out
}

// Root is the directory of the Manager's root cgroup in its first
// hierarchy (v2 when there is one).
func (m *Manager) Root() string { return m.hiers[0].base }

// Roots are the root's directories in every hierarchy in use.
func (m *Manager) Roots() []string {
	out := make([]string, len(m.hiers))
	for i, h := range m.hiers {
		out[i] = h.base
	}
	return out
}

// Check reports which limits in r no hierarchy can enforce, as an error
// wrapping ErrNoController (nil when all can).
func (m *Manager) Check(r spec.Resources) error {
	var missing []string
	need := func(c string, want bool) {
		if want && m.ctl[c] == nil {
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

// validName is what a group or process cgroup may be called: spec.ValidName
// names qualify; '/', "." and "..", and names starting with '_' (reserved
// for podsup) or '.' do not.
func validName(name string) error {
	if name == "" || len(name) > 200 || strings.ContainsAny(name, "/\x00\n") || name[0] == '_' || name[0] == '.' {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	return nil
}

// NewGroup creates the cgroup of a group with its limits. Zero fields of r
// are unlimited. A limit no hierarchy can enforce is an error wrapping
// ErrNoController (see Check), and nothing is created.
func (m *Manager) NewGroup(name string, r spec.Resources) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := m.Check(r); err != nil {
		return nil, fmt.Errorf("creating group cgroup %q: %w", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("creating group cgroup %q: manager closed", name)
	}
	if m.groups[name] != nil {
		return nil, fmt.Errorf("creating group cgroup %q: %w", name, ErrExist)
	}
	g := &Group{node{m: m, rel: name, hs: m.groupHiers(r)}}
	if err := g.create(); err != nil {
		return nil, err
	}
	if m.v2 != nil {
		var ctls []string
		for _, c := range v2Wanted {
			if m.ctl[c] == m.v2 {
				ctls = append(ctls, c)
			}
		}
		if len(ctls) > 0 {
			// So that each process's cgroup has its own memory.events
			// (OOM kills per process) and stats.
			if err := m.fs.write(filepath.Join(g.dir(m.v2), "cgroup.subtree_control"), controlList('+', ctls)); err != nil {
				_ = g.Delete() // undo; the error that matters is this one
				return nil, fmt.Errorf("enabling controllers for group %q: %w", name, err)
			}
		}
	}
	if err := g.SetResources(r); err != nil {
		_ = g.Delete() // undo; the error that matters is this one
		return nil, err
	}
	m.groups[name] = g
	return g, nil
}

// groupHiers picks the hierarchies a group with limits r lives in. With
// cgroup2 mounted, v2 alone holds the tree (placement at fork, cgroup.kill,
// the listing, CPU usage), so a group enters a v1 hierarchy only for a
// limit that hierarchy's controller enforces: moving the forking thread
// into v1 cgroups and back is most of what a placed start costs, and a
// group without limits (no sandbox block) then restarts at the cost of a
// host spawn. Its usage has no memory figures and its exits no OOMKilled
// verdict unless v2 offers the memory controller. Without v2 every v1
// hierarchy is used: they are all that tracks, freezes and accounts the
// tree. nil means all.
func (m *Manager) groupHiers(r spec.Resources) []*hier {
	if m.v2 == nil {
		return nil
	}
	hs := []*hier{m.v2}
	want := func(c string, need bool) {
		if h := m.ctl[c]; need && h != nil && !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	want("memory", r.Memory > 0)
	want("cpu", r.CPU > 0 || r.CPUWeight > 0)
	want("pids", r.Pids > 0)
	return hs
}

// Leftover is a cgroup Sweep found under the root that this Manager did
// not create: what an earlier podsup of the same instance left.
type Leftover struct {
	// Name is the child of the root it was: a group's name, or
	// "_supervisor" for an earlier podsup's own leaf.
	Name string
	// Path is its directory in the first hierarchy.
	Path string
	// Pids were running in it (and below) when Sweep found it; Sweep
	// killed them.
	Pids []int
}

// Sweep kills and removes every cgroup under the root that this Manager did
// not create: what an earlier podsup with the same instance name left
// behind (say it was SIGKILLed). It returns what it found, one Leftover per
// cgroup, sorted by name; on error, those it dealt with.
//
// It also kills every process in an earlier run's supervisor leaf except
// podsup itself. That is a still-running podsup of the same instance: two
// must not run. Call it once, right after New, before creating groups;
// a caller that can tell a live twin apart (a lock, the control socket)
// should refuse to start rather than sweep it.
func (m *Manager) Sweep() ([]Leftover, error) {
	m.mu.Lock()
	keep := map[string]bool{}
	for name := range m.groups {
		keep[name] = true
	}
	m.mu.Unlock()
	return m.removeChildren(keep)
}

// removeChildren kills and removes each child of the root not in keep.
func (m *Manager) removeChildren(keep map[string]bool) ([]Leftover, error) {
	names := map[string]bool{}
	for _, h := range m.hiers {
		entries, err := os.ReadDir(h.base)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", h.base, err)
		}
		for _, e := range entries {
			if e.IsDir() && !keep[e.Name()] {
				names[e.Name()] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var found []Leftover
	var errs []error
	for _, name := range sorted {
		// Every hierarchy: what the earlier run made may be in any.
		n := &node{m: m, rel: name}
		pids, err := n.Procs()
		if err != nil {
			errs = append(errs, err)
		}
		if err := n.Kill(); err != nil {
			errs = append(errs, err)
		}
		if name == supervisorLeaf && m.moved {
			continue // podsup is in it: it stays until Close
		}
		if err := n.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		found = append(found, Leftover{Name: name, Path: n.Path(), Pids: pids})
	}
	return found, errors.Join(errs...)
}

// Close kills everything in the tree, removes every cgroup of it, moves
// podsup back to its own cgroup if it had moved, and removes the root.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.groups = map[string]*Group{}
	m.mu.Unlock()
	_, err := m.removeChildren(nil)
	return errors.Join(err, m.removeRoots())
}

func (m *Manager) forget(g *Group) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups[g.rel] == g {
		delete(m.groups, g.rel)
	}
}
