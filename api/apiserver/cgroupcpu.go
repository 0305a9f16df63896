package apiserver

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podsup/podsup/sandbox/cgroups"
)

// CPU throttling and resident memory of a process's cgroup, for the
// metrics (podsup_cpu_cfs_*, podsup_cpu_limit_cores and the working set
// without a memory cgroup). Read on a scrape, like the rest of usage.go.

// throttling is the CFS bandwidth figures of the cgroup whose quota
// applies to a process.
type throttling struct {
	limitCores float64 // 0: no quota up to podsup's root
	cgroups.Throttling
}

// cpuThrottling reads the quota in force on the process's cgroup and the
// throttling of the cgroup that sets it. podsup sets a group's CPU limit
// on the group's cgroup, and the kernel counts throttling where the quota
// is: the process's own cgroup counts none. So the figures are those of
// the lowest quota on the way up to podsup's root, the same for every
// process of the group (a sum over a group's processes counts it once per
// process: take max by (group)). Without a quota anywhere, the process's
// own cgroup's (all zero) and limit 0. False when the process has no CPU
// cgroup of podsup's.
func (d cgroupDirs) cpuThrottling() (throttling, bool) {
	dir := d.dirFor("cpu", "cpu.max")
	if dir.Path == "" {
		return throttling{}, false
	}
	stat := dir
	var t throttling
	for c := dir; strings.Contains(c.Path+"/", "/podsup-"); c.Path = filepath.Dir(c.Path) {
		if cores, ok := c.CPUQuota(); ok && (t.limitCores == 0 || cores < t.limitCores) {
			t.limitCores, stat = cores, c
		}
		if strings.HasPrefix(filepath.Base(c.Path), "podsup-") {
			break
		}
	}
	var err error
	if t.Throttling, err = stat.Throttling(); err != nil {
		return throttling{}, false
	}
	return t, true
}

// maxTreePids bounds the processes treeRSS reads: a fork bomb in a
// group without a pids limit must not make a scrape read without end.
const maxTreePids = 4096

// treeRSS sums the resident memory (/proc/PID/statm) of the processes in
// the process's cgroup and below, in the first hierarchy podsup made it a
// cgroup in (v2 on a hybrid host). It stands in for the working set where
// podsup has no memory cgroup: it counts pages shared between processes
// once per process, and no page cache. False when the cgroup cannot be
// listed.
func (d cgroupDirs) treeRSS() (uint64, bool) {
	var dir string
	if l := layout(); l.V2 != nil && strings.Contains(d.v2+"/", "/podsup-") {
		dir = mountPath(l.V2, d.v2)
	} else {
		for _, c := range []string{"pids", "cpuacct", "cpu", "freezer"} {
			if h, p := l.V1For(c), d.v1[c]; h != nil && strings.Contains(p+"/", "/podsup-") {
				dir = mountPath(h, p)
				break
			}
		}
	}
	if dir == "" {
		return 0, false
	}
	page := uint64(os.Getpagesize())
	var total uint64
	seen, found := 0, false
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil // a cgroup that went away while walking
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		found = true
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if seen >= maxTreePids {
				return filepath.SkipAll
			}
			seen++
			pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			if err != nil || pid <= 0 {
				continue
			}
			statm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
			if err != nil {
				continue // gone
			}
			if f := strings.Fields(string(statm)); len(f) > 1 {
				if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					total += n * page
				}
			}
		}
		return nil
	})
	return total, found
}
