package cgroups

import (
	"math"
	"path/filepath"
	"strconv"

	"github.com/podsup/podsup/spec"
)

// cpuPeriod is the CFS period podsup uses, in µs: the kernel's default.
const cpuPeriod = 100000

// minCPUQuota is the smallest quota the kernel accepts, in µs.
const minCPUQuota = 1000

// cpuQuota turns cores into µs per cpuPeriod.
func cpuQuota(cores float64) int64 {
	return max(int64(math.Round(cores*cpuPeriod)), minCPUQuota)
}

// weightToShares maps a v2 cpu.weight (1–10000, default 100) to v1
// cpu.shares (2–262144, default 1024) as systemd does
// (cgroup_cpu_weight_to_shares): proportionally, so the defaults match.
// (runc's conversion goes the other way and does not map 100 to 1024.)
func weightToShares(w int) uint64 {
	return min(max(uint64(w)*1024/100, 2), 262144)
}

// limitWrite is one control-file write of a limit.
type limitWrite struct {
	file, value string
	// optional: the file exists only on some kernels or with swap
	// accounting; without it the write is skipped.
	optional bool
}

func (w limitWrite) apply(fs fsOps) error {
	if w.optional && !exists(w.file) {
		return nil
	}
	return fs.write(w.file, w.value)
}

// limitWrites lists, in order, the writes that give the cgroup exactly r.
// Every controller the cgroup has is written, so changing a limit back to
// zero (unlimited) takes effect too.
func (g *node) limitWrites(r spec.Resources) []limitWrite {
	var ws []limitWrite
	if h := g.ctl("memory"); h != nil {
		ws = append(ws, memoryWrites(h.Version, g.dir(h), r.Memory)...)
	}
	if h := g.ctl("cpu"); h != nil {
		ws = append(ws, cpuWrites(h.Version, g.dir(h), r.CPU, r.CPUWeight)...)
	}
	if h := g.ctl("pids"); h != nil {
		v := "max"
		if r.Pids > 0 {
			v = strconv.FormatInt(r.Pids, 10)
		}
		ws = append(ws, limitWrite{file: filepath.Join(g.dir(h), "pids.max"), value: v})
	}
	return ws
}

func memoryWrites(version int, dir string, limit int64) []limitWrite {
	if version == 2 {
		w := []limitWrite{{file: filepath.Join(dir, "memory.max"), value: "max"},
			{file: filepath.Join(dir, "memory.swap.max"), value: "max", optional: true}}
		if limit > 0 {
			// No swap: the limit is what the process may use, as in v1
			// where memsw equals the limit.
			w[0].value = strconv.FormatInt(limit, 10)
			w[1].value = "0"
		}
		return w
	}
	v := "-1"
	if limit > 0 {
		v = strconv.FormatInt(limit, 10)
	}
	mem := limitWrite{file: filepath.Join(dir, "memory.limit_in_bytes"), value: v}
	// memory+swap (present with swap accounting) = the limit: no swap.
	// The kernel keeps memsw >= limit at every moment, so raising writes
	// memsw first and lowering writes the memory limit first.
	memsw := limitWrite{file: filepath.Join(dir, "memory.memsw.limit_in_bytes"), value: v, optional: true}
	cur, bounded, err := readUint(mem.file)
	raising := limit <= 0 || err != nil || (bounded && uint64(limit) > cur)
	if raising {
		return []limitWrite{memsw, mem}
	}
	return []limitWrite{mem, memsw}
}

func cpuWrites(version int, dir string, cores float64, weight int) []limitWrite {
	if version == 2 {
		max := "max " + strconv.Itoa(cpuPeriod)
		if cores > 0 {
			max = strconv.FormatInt(cpuQuota(cores), 10) + " " + strconv.Itoa(cpuPeriod)
		}
		w := "100"
		if weight > 0 {
			w = strconv.Itoa(weight)
		}
		return []limitWrite{
			{file: filepath.Join(dir, "cpu.max"), value: max},
			{file: filepath.Join(dir, "cpu.weight"), value: w},
		}
	}
	quota := "-1"
	if cores > 0 {
		quota = strconv.FormatInt(cpuQuota(cores), 10)
	}
	shares := "1024"
	if weight > 0 {
		shares = strconv.FormatUint(weightToShares(weight), 10)
	}
	return []limitWrite{
		{file: filepath.Join(dir, "cpu.cfs_period_us"), value: strconv.Itoa(cpuPeriod)},
		{file: filepath.Join(dir, "cpu.cfs_quota_us"), value: quota},
		{file: filepath.Join(dir, "cpu.shares"), value: shares},
	}
}
