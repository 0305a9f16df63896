package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	switch {
	case n.m.v2 != nil:
		// cpu.stat usage_usec is a core file on v2: there even without
		// the cpu controller (as on these hybrid machines).
		usec, err := readKeyed(filepath.Join(n.dir(n.m.v2), "cpu.stat"), "usage_usec")
		note(err)
		s.CPU = time.Duration(usec) * time.Microsecond
	case n.ctl("cpuacct") != nil:
		ns, _, err := readUint(filepath.Join(n.dir(n.ctl("cpuacct")), "cpuacct.usage"))
		note(err)
		s.CPU = time.Duration(ns)
	}
	if h := n.ctl("memory"); h != nil {
		cur, peak := "memory.usage_in_bytes", "memory.max_usage_in_bytes"
		if h.Version == 2 {
			cur, peak = "memory.current", "memory.peak"
		}
		var err error
		s.MemoryCurrent, _, err = readUint(filepath.Join(n.dir(h), cur))
		note(err)
		s.MemoryPeak, _, err = readUint(filepath.Join(n.dir(h), peak))
		note(err)
		s.OOMKills, err = n.OOMKills()
		note(err)
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("reading stats of %s: %w", n.Path(), errors.Join(errs...))
	}
	return s, nil
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
