package cgroups

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCPUQuotaReadsBothVersions: the CPU limit in cores from v2's cpu.max
// and v1's cpu.cfs_quota_us over cpu.cfs_period_us; "max" and -1 are none.
func TestCPUQuotaReadsBothVersions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu.max", "50000 100000\n")
	if c, ok := (Dir{Path: dir, Version: 2}).CPUQuota(); !ok || c != 0.5 {
		t.Errorf("v2 cpu.max 50000 100000: %v %v, want 0.5 cores", c, ok)
	}
	write("cpu.max", "max 100000\n")
	if _, ok := (Dir{Path: dir, Version: 2}).CPUQuota(); ok {
		t.Error("v2 cpu.max max: a limit, want none")
	}
	write("cpu.cfs_quota_us", "25000\n")
	write("cpu.cfs_period_us", "100000\n")
	if c, ok := (Dir{Path: dir, Version: 1}).CPUQuota(); !ok || c != 0.25 {
		t.Errorf("v1 quota 25000 period 100000: %v %v, want 0.25 cores", c, ok)
	}
	write("cpu.cfs_quota_us", "-1\n")
	if _, ok := (Dir{Path: dir, Version: 1}).CPUQuota(); ok {
		t.Error("v1 quota -1: a limit, want none")
	}
}
