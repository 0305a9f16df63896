package cgroups

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Stats is a cgroup's usage, from whichever hierarchy has each figure.
// A figure no hierarchy offers reads as zero.
type Stats struct {
	// CPU is the CPU time used (user + system) by all processes that ever
	// ran in the tree: v2 cpu.stat usage_usec, or v1 cpuacct.usage.
	CPU time.Duration
	// MemoryCurrent is the memory charged now (v2 memory.current, v1
	// memory.usage_in_bytes), in bytes.
	MemoryCurrent uint64
	// MemoryPeak is the high-water mark (v2 memory.peak, kernel 5.19+;
	// v1 memory.max_usage_in_bytes), in bytes.
	MemoryPeak uint64
	// OOMKills counts processes the kernel's OOM killer killed in the tree
	// (see OOMKills).
	OOMKills uint64
}

// Stats reads the cgroup's usage.
func (n *node) Stats() (Stats, error) {
	var s Stats
	var errs []error
	// optional: a file missing because the kernel is older is no error.
	note := func(err error) {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	var err error
	switch {
	case n.m.v2 != nil:
		// cpu.stat usage_usec is a core file on v2: there even without
		// the cpu controller (as on these hybrid machines).
		s.CPU, err = n.at(n.m.v2).CPU()
		note(err)
	case n.ctl("cpuacct") != nil:
		s.CPU, err = n.at(n.ctl("cpuacct")).CPU()
		note(err)
	}
	if h := n.ctl("memory"); h != nil {
		s.MemoryCurrent, err = n.at(h).Memory()
		note(err)
		s.MemoryPeak, err = n.at(h).MemoryPeak()
		note(err)
		s.OOMKills, err = n.OOMKills()
		note(err)
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("reading stats of %s: %w", n.Path(), errors.Join(errs...))
	}
	return s, nil
}

func (n *node) at(h *hier) Dir { return Dir{Path: n.dir(h), Version: h.Version} }

// Dir is a cgroup's directory in a hierarchy of version Version (1 or 2):
// where its figures and limits are read, by the names each version gives
// them. Stats reads podsup's cgroups through it, package apiserver a
// running process's.
type Dir struct {
	Path    string
	Version int
}

// CPU is the CPU time used (user + system) by all processes that ever ran
// in the tree: v2 cpu.stat usage_usec, v1 cpuacct.usage.
func (d Dir) CPU() (time.Duration, error) {
	if d.Version == 2 {
		usec, err := readKeyed(filepath.Join(d.Path, "cpu.stat"), "usage_usec")
		return time.Duration(usec) * time.Microsecond, err
	}
	ns, _, err := readUint(filepath.Join(d.Path, "cpuacct.usage"))
	return time.Duration(ns), err
}

// Memory is the memory charged now: v2 memory.current, v1
// memory.usage_in_bytes.
func (d Dir) Memory() (uint64, error) {
	return d.number("memory.current", "memory.usage_in_bytes")
}

// MemoryPeak is the high-water mark: v2 memory.peak (kernel 5.19+), v1
// memory.max_usage_in_bytes.
func (d Dir) MemoryPeak() (uint64, error) {
	return d.number("memory.peak", "memory.max_usage_in_bytes")
}

// InactiveFile is the page cache the kernel reclaims first, which a
// working set leaves out: memory.stat's inactive_file (v2) or
// total_inactive_file (v1, hierarchical).
func (d Dir) InactiveFile() (uint64, error) {
	key := "total_inactive_file"
	if d.Version == 2 {
		key = "inactive_file"
	}
	return readKeyed(filepath.Join(d.Path, "memory.stat"), key)
}

// MemoryLimit is the limit set on this cgroup itself: v2 memory.max, v1
// memory.limit_in_bytes; false for none ("max", or v1's huge "unlimited").
func (d Dir) MemoryLimit() (uint64, bool) {
	return d.limit("memory.max", "memory.limit_in_bytes")
}

// Pids is the number of tasks in the tree (pids.current).
func (d Dir) Pids() (uint64, error) { return d.number("pids.current", "pids.current") }

// PidsLimit is the limit set on this cgroup itself (pids.max); false for
// none.
func (d Dir) PidsLimit() (uint64, bool) { return d.limit("pids.max", "pids.max") }

// CPUQuota is the CFS quota set on this cgroup itself, in cores: v2
// cpu.max ("QUOTA PERIOD", "max" for none), v1 cpu.cfs_quota_us (-1 for
// none) over cpu.cfs_period_us; false for none.
func (d Dir) CPUQuota() (float64, bool) {
	b, err := readFile(d.file("cpu.max", "cpu.cfs_quota_us"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if d.Version == 1 {
		p, err := readFile(filepath.Join(d.Path, "cpu.cfs_period_us"))
		if err != nil {
			return 0, false
		}
		f = append(f, strings.Fields(string(p))...)
	}
	if len(f) != 2 {
		return 0, false
	}
	quota, err := strconv.ParseFloat(f[0], 64)
	if err != nil || quota <= 0 { // "max", -1
		return 0, false
	}
	period, err := strconv.ParseFloat(f[1], 64)
	if err != nil || period <= 0 {
		return 0, false
	}
	return quota / period, true
}

// Throttling is the CFS bandwidth figures of a cgroup with a quota.
type Throttling struct {
	Periods, Throttled uint64
	ThrottledTime      time.Duration
}

// Throttling reads cpu.stat's nr_periods, nr_throttled and throttled_usec
// (v2) or throttled_time (v1, nanoseconds).
func (d Dir) Throttling() (Throttling, error) {
	b, err := readFile(filepath.Join(d.Path, "cpu.stat"))
	if err != nil {
		return Throttling{}, err
	}
	var t Throttling
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			t.Periods = n
		case "nr_throttled":
			t.Throttled = n
		case "throttled_usec": // v2
			t.ThrottledTime = time.Duration(n) * time.Microsecond
		case "throttled_time": // v1
			t.ThrottledTime = time.Duration(n)
		}
	}
	return t, nil
}

// number reads this version's file (v2's name or v1's) of one number.
func (d Dir) number(v2, v1 string) (uint64, error) {
	n, _, err := readUint(d.file(v2, v1))
	return n, err
}

// limit reads this version's limit file; "max", v1's "unlimited" (a huge
// number) and an unreadable file are none.
func (d Dir) limit(v2, v1 string) (uint64, bool) {
	n, ok, err := readUint(d.file(v2, v1))
	return n, ok && err == nil && n < math.MaxInt64/2
}

func (d Dir) file(v2, v1 string) string {
	if d.Version == 2 {
		return filepath.Join(d.Path, v2)
	}
	return filepath.Join(d.Path, v1)
}

// OOMKills counts the processes in the tree that the OOM killer killed
// since the cgroup was created. The kernel counts a kill in the victim's
// own cgroup: v2 memory.events (oom_kill, hierarchical) already includes
// the cgroups below; v1 memory.oom_control (oom_kill, kernel 4.13+) does
// not, so it is summed over the tree. Compare the count before and after
// an exit to tell whether that exit was an OOM kill (reason OOMKilled).
// Without a memory controller it fails with ErrNoController.
func (n *node) OOMKills() (uint64, error) {
	h := n.ctl("memory")
	if h == nil {
		return 0, errNoMemoryController
	}
	top := n.dir(h)
	if h.Version == 2 {
		v, err := readKeyed(filepath.Join(top, "memory.events"), "oom_kill")
		if err != nil {
			return 0, fmt.Errorf("reading OOM kills of %s: %w", top, err)
		}
		return v, nil
	}
	dirs, err := subdirs(top)
	if err != nil {
		return 0, fmt.Errorf("reading OOM kills of %s: %w", top, err)
	}
	var total uint64
	for _, d := range append(dirs, top) {
		v, err := readKeyed(filepath.Join(d, "memory.oom_control"), "oom_kill")
		if err != nil {
			return 0, fmt.Errorf("reading OOM kills of %s: %w", d, err)
		}
		total += v
	}
	return total, nil
}
