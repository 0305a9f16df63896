package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/testusers"
)

// TestLeakCheckCountsOnlyTheTestsOwnPodsups runs the suite's leak check
// (podsupCgroups, what checkNothingLeft counts) while another real
// podsup up runs on the host, started outside the tests' record as
// another user's or another test run's would be: its cgroups must not
// count as the tests' own, while those of a podsup the tests started do.
func TestLeakCheckCountsOnlyTheTestsOwnPodsups(t *testing.T) {
	testusers.RequireRoot(t) // cgroups
	t.Parallel()
	dir := t.TempDir()
	socket := filepath.Join(dir, "foreign.sock")
	cfg := filepath.Join(dir, "podsup.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(examplesConfig, socket)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := podsupCmd(t, "up", "-f", cfg)
	var env []string
	for _, kv := range c.Env {
		if !strings.HasPrefix(kv, "PODSUP_TEST_INSTANCES=") {
			env = append(env, kv)
		}
	}
	c.Env = env
	foreign := start(t, c)
	fc := api.NewClient(socket)
	if !eventually(func() bool { _, err := fc.Version(context.Background()); return err == nil }) {
		t.Fatalf("the foreign podsup never answered: %s", foreign.sofar(t))
	}
	own := startUp(t, examplesConfig)

	cgroupsOf := func(sock string) []string {
		var out []string
		for d := range allCgroupRoots() {
			if filepath.Base(d) == "podsup-"+instanceName(sock) {
				out = append(out, d)
			}
		}
		return out
	}
	// Both have their cgroups once their processes run.
	if !eventually(func() bool { return len(cgroupsOf(socket)) > 0 && len(cgroupsOf(own.socket)) > 0 }) {
		t.Fatalf("no cgroups: foreign %v, own %v (is there a cgroup hierarchy?)", cgroupsOf(socket), cgroupsOf(own.socket))
	}
	counted := podsupCgroups()
	for _, d := range cgroupsOf(socket) {
		if counted[d] {
			t.Errorf("the leak check counts %s, the foreign podsup's, as the tests' own", d)
		}
	}
	for _, d := range cgroupsOf(own.socket) {
		if !counted[d] {
			t.Errorf("the leak check misses %s, of a podsup the tests started", d)
		}
	}
}

// allCgroupRoots is every podsup-* cgroup root, read here so that the
// test does not take the check's word for what exists.
func allCgroupRoots() map[string]bool {
	out := map[string]bool{}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/podsup-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/podsup-*")
	for _, d := range append(dirs, more...) {
		out[d] = true
	}
	return out
}
