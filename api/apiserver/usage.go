package apiserver

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/cgroups"
)

// The cgroup of a running process and what it uses, read from the files
// the kernel keeps: /proc/PID/cgroup names the process's cgroup in each
// hierarchy, and the figures are read where the kernel keeps them (v2, or
// the v1 hierarchy of their controller on a v1 or hybrid host). Nothing is
// asked of the sandbox runtime: the kernel's view is the truth, and it
// costs a request nothing while no one asks.

// layout is the host's cgroup hierarchies, detected once.
var layout = sync.OnceValue(func() *cgroups.Layout {
	l, err := cgroups.Detect()
	if err != nil {
		return &cgroups.Layout{}
	}
	return l
})

// cgroupDirs is one process's cgroup: its path in the v2 hierarchy and in
// each v1 controller's, as /proc/PID/cgroup names them.
type cgroupDirs struct {
	v2 string            // "" without v2
	v1 map[string]string // controller -> path
}

// processCgroup reads /proc/PID/cgroup; false when the process is gone or
// the file unreadable.
func processCgroup(pid int) (cgroupDirs, bool) {
	if pid <= 0 {
		return cgroupDirs{}, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return cgroupDirs{}, false
	}
	return parseProcCgroup(b), true
}

// parseProcCgroup parses "id:controllers:path" lines.
func parseProcCgroup(b []byte) cgroupDirs {
	d := cgroupDirs{v1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			d.v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			d.v1[c] = parts[2]
		}
	}
	return d
}

// podsupOwned reports whether the process sits in a cgroup podsup made
// (below a "podsup-<instance>" root) in the hierarchy its name comes from:
// a process that shares podsup's own or the host's cgroup has no figures
// of its own.
func (d cgroupDirs) podsupOwned() bool {
	return strings.Contains(d.name()+"/", "/podsup-")
}

// name is the cgroup's path for display: v2's, else the v1 memory
// controller's (where podsup sets limits without v2).
func (d cgroupDirs) name() string {
	if d.v2 != "" && strings.Contains(d.v2+"/", "/podsup-") {
		return d.v2
	}
	for _, c := range []string{"memory", "pids", "cpuacct"} {
		if p := d.v1[c]; p != "" {
			return p
		}
	}
	return d.v2
}

// parent is the cgroup one level up in every hierarchy.
func (d cgroupDirs) parent() cgroupDirs {
	up := cgroupDirs{v1: map[string]string{}}
	if d.v2 != "" {
		up.v2 = path.Dir(d.v2)
	}
	for c, p := range d.v1 {
		up.v1[c] = path.Dir(p)
	}
	return up
}

// dirFor is the directory holding controller c's files: the v2 cgroup when
// it has v2file, else the v1 one of c, when podsup made it; Path "" for
// none.
func (d cgroupDirs) dirFor(c, v2file string) cgroups.Dir {
	l := layout()
	if l.V2 != nil && d.v2 != "" {
		dir := mountPath(l.V2, d.v2)
		if _, err := os.Stat(filepath.Join(dir, v2file)); err == nil {
			return cgroups.Dir{Path: dir, Version: 2}
		}
	}
	if h, p := l.V1For(c), d.v1[c]; h != nil && strings.Contains(p+"/", "/podsup-") {
		return cgroups.Dir{Path: mountPath(h, p), Version: 1}
	}
	return cgroups.Dir{}
}

// mountPath is where cgroup p of hierarchy h is in the file system.
func mountPath(h *cgroups.Hierarchy, p string) string {
	p, root := path.Clean("/"+p), path.Clean("/"+h.Root)
	if root != "/" {
		p = strings.TrimPrefix(p, root)
	}
	return filepath.Join(h.Mount, filepath.FromSlash(p))
}

// usage reads the cgroup's CPU, memory and pids figures and the limits in
// force on it. The limits are the lowest set on the cgroup or any podsup
// made above it, since podsup sets a group's limits on the group's cgroup
// and its processes live below.
func (d cgroupDirs) usage() *api.Usage {
	u := &api.Usage{}
	found := false
	if dir := d.dirFor("cpuacct", "cpu.stat"); dir.Path != "" {
		if cpu, err := dir.CPU(); err == nil {
			found = true
			u.CPU, u.CPUSeconds = cpu.Round(time.Millisecond).String(), cpu.Seconds()
		}
	}
	if dir := d.dirFor("memory", "memory.current"); dir.Path != "" {
		if v, err := dir.Memory(); err == nil {
			found = true
			u.MemoryBytes = v
			u.MemoryLimitBytes = limitUpwards(dir, cgroups.Dir.MemoryLimit)
		}
	}
	if dir := d.dirFor("pids", "pids.current"); dir.Path != "" {
		if v, err := dir.Pids(); err == nil {
			found = true
			u.Pids = v
			u.PidsLimit = limitUpwards(dir, cgroups.Dir.PidsLimit)
		}
	}
	if !found {
		return nil
	}
	return u
}

// limitUpwards is the lowest limit of dir and its ancestors up to and
// including podsup's root ("podsup-<instance>"); 0 for none.
func limitUpwards(dir cgroups.Dir, limit func(cgroups.Dir) (uint64, bool)) uint64 {
	var lowest uint64
	for d := dir; strings.Contains(d.Path+"/", "/podsup-"); d.Path = filepath.Dir(d.Path) {
		if v, ok := limit(d); ok && (lowest == 0 || v < lowest) {
			lowest = v
		}
		if strings.HasPrefix(filepath.Base(d.Path), "podsup-") {
			break
		}
	}
	return lowest
}
