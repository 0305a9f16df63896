package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestManPagesAreCurrent: the man pages checked in under man/ are what the
// command tree and docs/config.md give today. After changing a command, a
// flag or the reference, regenerate them:
//
//	go run ./cmd/podsup gen-man man docs/config.md
func TestManPagesAreCurrent(t *testing.T) {
	ref, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := manPages(newRootCmd(), string(ref))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"podsup.1", "podsup-run.1", "podsup-up.1", "podsup-status.1", "podsup-health.1", "podsup-wait.1", "podsup.hcl.5"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("no %s among the generated pages", want)
		}
	}
	onDisk, _ := filepath.Glob("../../man/*")
	var names []string
	for name, text := range pages {
		names = append(names, name)
		b, err := os.ReadFile(filepath.Join("../../man", name))
		if err != nil || string(b) != text {
			t.Errorf("man/%s is not current (regenerate: go run ./cmd/podsup gen-man man docs/config.md)", name)
		}
	}
	for _, p := range onDisk {
		if !slices.Contains(names, filepath.Base(p)) {
			t.Errorf("man/%s is no longer generated: remove it", filepath.Base(p))
		}
	}
	if cfg := pages["podsup.hcl.5"]; !strings.Contains(cfg, "termination_grace_period") {
		t.Errorf("podsup.hcl(5) lacks termination_grace_period:\n%s", cfg)
	}
}
