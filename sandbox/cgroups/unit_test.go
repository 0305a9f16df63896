package cgroups

import (
	"os"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

func specResources(memory int64, cpu float64, weight int, pids int64) spec.Resources {
	return spec.Resources{Memory: memory, CPU: cpu, CPUWeight: weight, Pids: pids}
}

// This machine's layout: v1 controllers, a controller-less cgroup2, and
// podsup's memory cgroup nested below /process_api.
const hybridMountinfo = `25 1 0:23 / /sys rw,nosuid - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const hybridSelf = `9:name=systemd:/
8:pids:/
6:freezer:/
4:memory:/process_api/d571
2:cpuacct:/
1:cpu:/
0::/
`

func TestParseLayout(t *testing.T) {
	tests := []struct {
		name, mountinfo, self string
		kind                  string
		want                  map[string]string // "v2" or first controller -> mount|own
	}{
		{
			name: "hybrid", mountinfo: hybridMountinfo, self: hybridSelf, kind: "hybrid",
			want: map[string]string{
				"v2":           "/sys/fs/cgroup/unified|/",
				"memory":       "/sys/fs/cgroup/memory|/process_api/d571",
				"cpu":          "/sys/fs/cgroup/cpu|/",
				"pids":         "/sys/fs/cgroup/pids|/",
				"name=systemd": "/sys/fs/cgroup/systemd|/",
			},
		},
		{
			name:      "pure v2",
			mountinfo: "30 20 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			self:      "0::/system.slice/podsup.service\n",
			kind:      "v2",
			want:      map[string]string{"v2": "/sys/fs/cgroup|/system.slice/podsup.service"},
		},
		{
			name: "pure v1, cpu and cpuacct co-mounted",
			mountinfo: "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
				"35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			self: "3:cpu,cpuacct:/a\n2:memory:/b\n",
			kind: "v1",
			want: map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct|/a", "memory": "/sys/fs/cgroup/memory|/b"},
		},
		{
			name:      "escaped mount point",
			mountinfo: `41 31 0:38 / /mnt/my\040cgroup rw - cgroup2 cgroup2 rw` + "\n",
			self:      "0::/x\n",
			kind:      "v2",
			want:      map[string]string{"v2": "/mnt/my cgroup|/x"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parseLayout(strings.NewReader(tc.mountinfo), strings.NewReader(tc.self))
			if err != nil {
				t.Fatal(err)
			}
			if l.Kind() != tc.kind {
				t.Errorf("Kind = %s, want %s", l.Kind(), tc.kind)
			}
			got := map[string]string{}
			if l.V2 != nil {
				got["v2"] = l.V2.Mount + "|" + l.V2.Own
			}
			for _, h := range l.V1 {
				got[h.Controllers[0]] = h.Mount + "|" + h.Own
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: got %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestOwnDir(t *testing.T) {
	tests := []struct{ mount, root, own, want string }{
		{"/sys/fs/cgroup", "/", "/", "/sys/fs/cgroup"},
		{"/sys/fs/cgroup", "/", "/a/b", "/sys/fs/cgroup/a/b"},
		// A container without a cgroup namespace sees only its subtree.
		{"/sys/fs/cgroup/memory", "/docker/abc", "/docker/abc", "/sys/fs/cgroup/memory"},
		{"/sys/fs/cgroup/memory", "/docker/abc", "/docker/abc/sub", "/sys/fs/cgroup/memory/sub"},
		{"/sys/fs/cgroup/memory", "/docker/abc", "/docker/abcd", ""},
	}
	for _, tc := range tests {
		h := &Hierarchy{Mount: tc.mount, Root: tc.root, Own: tc.own}
		got, err := h.OwnDir()
		if tc.want == "" {
			if err == nil {
				t.Errorf("OwnDir(%+v) = %q, want an error: own cgroup outside the mount", tc, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("OwnDir(%+v) = %q, %v; want %q", tc, got, err, tc.want)
		}
	}
}

func TestCPUConversions(t *testing.T) {
	for _, tc := range []struct {
		weight int
		shares uint64
	}{{1, 10}, {100, 1024}, {200, 2048}, {10000, 102400}} {
		if got := weightToShares(tc.weight); got != tc.shares {
			t.Errorf("weightToShares(%d) = %d, want %d", tc.weight, got, tc.shares)
		}
	}
	for _, tc := range []struct {
		cores float64
		quota int64
	}{{0.5, 50000}, {2, 200000}, {0.001, minCPUQuota}, {1.25, 125000}} {
		if got := cpuQuota(tc.cores); got != tc.quota {
			t.Errorf("cpuQuota(%v) = %d, want %d", tc.cores, got, tc.quota)
		}
	}
}

// The one guard before every signal: never a pid that kill(2) would read as
// "everyone" or "my group", never init, never podsup.
func TestSignalableRefusesDangerousPids(t *testing.T) {
	for _, pid := range []int{-1, 0, 1, os.Getpid()} {
		if signalable(pid) {
			t.Errorf("signalable(%d) = true", pid)
		}
	}
	if !signalable(os.Getpid() + 1) {
		t.Errorf("signalable(%d) = false for an ordinary pid", os.Getpid()+1)
	}
}
