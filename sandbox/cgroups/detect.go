package cgroups

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podsup/podsup/internal/mountinfo"
)

// Hierarchy is one mounted cgroup hierarchy and podsup's place in it.
type Hierarchy struct {
	// Version is 1 or 2.
	Version int
	// Mount is where the hierarchy is mounted, e.g. /sys/fs/cgroup/memory.
	Mount string
	// Root is the cgroup mounted there (mountinfo's root field), usually
	// "/"; a container without a cgroup namespace may see only a subtree.
	Root string
	// Own is podsup's cgroup, as /proc/self/cgroup names it.
	Own string
	// Controllers are, for v1, the controllers bound to this mount (e.g.
	// [cpu cpuacct], or [name=systemd]); for v2, those podsup's own cgroup
	// may hand to its children (its cgroup.controllers).
	Controllers []string
}

// OwnDir is the directory of podsup's own cgroup in this hierarchy.
func (h *Hierarchy) OwnDir() (string, error) {
	own := path.Clean("/" + h.Own)
	root := path.Clean("/" + h.Root)
	var rel string
	switch {
	case root == "/":
		rel = own
	case own == root:
		rel = "/"
	case strings.HasPrefix(own, root+"/"):
		rel = strings.TrimPrefix(own, root)
	default:
		return "", fmt.Errorf("%w: own cgroup %s of %s is outside the mounted subtree %s", ErrUnavailable, own, h.Mount, root)
	}
	return filepath.Join(h.Mount, filepath.FromSlash(rel)), nil
}

// Has reports whether the hierarchy offers controller c.
func (h *Hierarchy) Has(c string) bool { return slices.Contains(h.Controllers, c) }

// Layout is every cgroup hierarchy visible to podsup.
type Layout struct {
	// V2 is the cgroup2 hierarchy, or nil.
	V2 *Hierarchy
	// V1 holds one entry per v1 hierarchy podsup is a member of.
	V1 []*Hierarchy
}

// V1For returns the v1 hierarchy that has controller c, or nil.
func (l *Layout) V1For(c string) *Hierarchy {
	for _, h := range l.V1 {
		if h.Has(c) {
			return h
		}
	}
	return nil
}

// Kind names the layout: "v2", "hybrid", "v1" or "none".
func (l *Layout) Kind() string {
	switch {
	case l.V2 != nil && len(l.V1) == 0:
		return "v2"
	case l.V2 != nil:
		return "hybrid"
	case len(l.V1) > 0:
		return "v1"
	}
	return "none"
}

// Detect reads the hierarchies from /proc/self/mountinfo and
// /proc/self/cgroup, and the controllers podsup's v2 cgroup offers.
func Detect() (*Layout, error) {
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer mi.Close()
	cg, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading own cgroups: %w", err)
	}
	defer cg.Close()
	l, err := parseLayout(mi, cg)
	if err != nil {
		return nil, err
	}
	if l.V2 != nil {
		dir, err := l.V2.OwnDir()
		if err != nil {
			return nil, err
		}
		// An absent file (a very old kernel) means no controllers.
		l.V2.Controllers, _ = readWords(filepath.Join(dir, "cgroup.controllers"))
	}
	return l, nil
}

// mountEntry is the part of a mountinfo line Detect needs.
type mountEntry struct {
	root, mount, fstype string
	superOpts           []string
}

// parseLayout matches the lines of /proc/self/cgroup ("id:controllers:path")
// with the cgroup mounts in mountinfo.
func parseLayout(mountinfo, selfCgroup io.Reader) (*Layout, error) {
	mounts, err := parseMountinfo(mountinfo)
	if err != nil {
		return nil, err
	}
	l := &Layout{}
	sc := bufio.NewScanner(selfCgroup)
	for sc.Scan() {
		id, rest, ok1 := strings.Cut(sc.Text(), ":")
		ctrls, own, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if id == "0" && ctrls == "" {
			if m := pickMount(mounts, own, func(m mountEntry) bool { return m.fstype == "cgroup2" }); m != nil {
				l.V2 = &Hierarchy{Version: 2, Mount: m.mount, Root: m.root, Own: own}
			}
			continue
		}
		want := strings.Split(ctrls, ",")
		m := pickMount(mounts, own, func(m mountEntry) bool {
			if m.fstype != "cgroup" {
				return false
			}
			for _, c := range want {
				if !slices.Contains(m.superOpts, c) {
					return false
				}
			}
			return true
		})
		if m != nil {
			l.V1 = append(l.V1, &Hierarchy{Version: 1, Mount: m.mount, Root: m.root, Own: own, Controllers: want})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading own cgroups: %w", err)
	}
	return l, nil
}

// pickMount prefers, among the matching mounts, one whose root contains own
// (a bind mount of some other subtree cannot reach podsup's cgroup).
func pickMount(mounts []mountEntry, own string, match func(mountEntry) bool) *mountEntry {
	var first *mountEntry
	for i := range mounts {
		m := &mounts[i]
		if !match(*m) {
			continue
		}
		if first == nil {
			first = m
		}
		if m.root == "/" || own == m.root || strings.HasPrefix(own, m.root+"/") {
			return m
		}
	}
	return first
}

// parseMountinfo keeps the cgroup and cgroup2 mounts.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	all, err := mountinfo.Parse(r)
	if err != nil {
		return nil, err
	}
	var out []mountEntry
	for _, m := range all {
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			out = append(out, mountEntry{root: m.Root, mount: m.MountPoint, fstype: m.FSType, superOpts: m.SuperOptions})
		}
	}
	return out, nil
}
