package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestEveryCommandHonoursOrRefusesJSON runs every command with -o json
// against a live podsup: each must either print JSON on stdout (one or
// more values) and exit 0, or refuse with an error that names -o json.
// Printing a table, or nothing, for -o json is what this forbids: a
// script that asks for JSON must get it or be told.
func TestEveryCommandHonoursOrRefusesJSON(t *testing.T) {
	t.Parallel()
	f := startUp(t, examplesConfig)
	other := filepath.Join(t.TempDir(), "other.sock")
	// An invocation that works without -o json, per command; shutdown last.
	runs := []struct {
		path string
		args []string
	}{
		{"podsup version", []string{"version"}},
		{"podsup status", []string{"status"}},
		{"podsup describe", []string{"describe", "web/api"}},
		{"podsup security", []string{"security", "web"}},
		{"podsup events", []string{"events"}},
		{"podsup logs", []string{"logs", "web/api"}},
		{"podsup top", []string{"top"}},
		{"podsup health", []string{"health"}},
		{"podsup wait", []string{"wait", "--timeout", "0"}},
		{"podsup metrics", []string{"metrics"}},
		{"podsup validate", []string{"validate", "-f", f.cfg}},
		{"podsup exec", []string{"exec", "web", "--", "true"}},
		{"podsup run", []string{"run", "--", "true"}},
		{"podsup up", []string{"up", "-f", f.cfg, "--socket", other}},
		{"podsup gen-man", []string{"gen-man", t.TempDir(), filepath.Join("..", "..", "docs", "config.md")}},
		{"podsup stop", []string{"stop", "db/postgres", "--grace", "1s"}},
		{"podsup start", []string{"start", "db/postgres"}},
		{"podsup restart", []string{"restart", "web/worker"}},
		{"podsup reload", []string{"reload"}},
		{"podsup recreate", []string{"recreate", "web/worker"}},
		{"podsup recreate list", []string{"recreate", "list"}},
		{"podsup recreate status", []string{"recreate", "status", "rc-1"}},
		{"podsup shutdown", []string{"shutdown"}},
	}
	covered := map[string]bool{}
	for _, r := range runs {
		covered[r.path] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && c.Name() != "help" && !covered[c.CommandPath()] {
			t.Errorf("%s is not run with -o json here: add it", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())

	for _, r := range runs {
		code, stdout, stderr := runSplit(t, append([]string{"--socket", f.socket, "-o", "json"}, r.args...)...)
		switch {
		case code == 0 && isJSONStream(stdout):
		case code != 0 && code != -1 && strings.Contains(stderr, "-o json"):
		default:
			t.Errorf("%s -o json neither printed JSON nor refused it: exit %d\nstdout: %q\nstderr: %q", r.path, code, stdout, stderr)
		}
	}
}

// runSplit runs podsup with its stdout and stderr apart; -1 for one that
// did not end within 30s (it is then stopped).
func runSplit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	errFile, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	c := podsupCmd(t, args...)
	c.Stderr = errFile
	s := start(t, c)
	outc := make(chan string, 1)
	go func() { outc <- s.rest(t) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := s.p.Wait(ctx)
	if err != nil {
		return -1, "(still running after 30s)", ""
	}
	stdout = <-outc
	b, _ := os.ReadFile(errFile.Name())
	return e.Code(), stdout, string(b)
}

// isJSONStream is whether s is one or more JSON values and nothing else.
func isJSONStream(s string) bool {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return n > 0
		}
		if err != nil {
			return false
		}
		n++
	}
}
