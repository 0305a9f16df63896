package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/proc"
)

// examplesConfig has every group and process the commands' examples
// name (web/api, web/worker, db/postgres, app/migrate), so that one
// podsup up serves every example line. It binds no port: the examples
// tests run beside it.
const examplesConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "5s"
  process "api" {
    command = ["sh", "-c", "echo api started; exec sleep 100000"]
  }
  process "worker" {
    command = ["sh", "-c", "echo worker started; exec sleep 100001"]
  }
}
group "db" {
  termination_grace_period = "5s"
  process "postgres" {
    command = ["sh", "-c", "echo postgres started; exec sleep 100002"]
  }
}
group "app" {
  restart_policy = "on-failure"
  process "migrate" {
    command = ["sh", "-c", "echo migrated"]
  }
}
`

// notRunHere are the first words of example lines that are not podsup
// commands and cannot run in a test: Dockerfile instructions and systemd.
var notRunHere = map[string]bool{"HEALTHCHECK": true, "ENTRYPOINT": true, "CMD": true, "systemctl": true}

// TestHelpExamplesRunAsPasted runs every example line of every command's
// --help (cobra's Example) and of every man page's EXAMPLES against a
// live podsup up, as a user pasting them would: through bash, with podsup
// on PATH. Each must succeed (exit 0); one that follows (-f, -w, up)
// must still run after a few seconds and end with exit 0 on SIGTERM. A
// line that is not a podsup command must be one this test knows cannot
// run here (a Dockerfile line, systemctl); curl is run against the
// fixture's socket. Help that names a flag, a process or a file that does
// not exist fails here.
func TestHelpExamplesRunAsPasted(t *testing.T) {
	t.Parallel()
	lines := helpExampleLines(t)
	if len(lines) < 30 {
		t.Fatalf("found %d example lines, want the examples of every command: %q", len(lines), lines)
	}

	bin := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\nexec env %s=1 %q \"$@\"\n", asPodsupEnv, testExe(t))
	if err := os.WriteFile(filepath.Join(bin, "podsup"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}

	// In an order that keeps the fixture able to answer the next line:
	// stop before start, up on sockets of their own, shutdown last, each
	// on a podsup of its own.
	var first, stops, starts, ups, shutdowns []string
	for _, l := range lines {
		switch strings.Fields(l)[1] {
		case "stop":
			stops = append(stops, l)
		case "start":
			starts = append(starts, l)
		case "up":
			ups = append(ups, l)
		case "shutdown":
			shutdowns = append(shutdowns, l)
		default:
			first = append(first, l)
		}
	}

	f := startUp(t, examplesConfig)
	env := func(socket string) []string {
		return append(cleanEnv(), "PATH="+bin+":"+os.Getenv("PATH"), "PODSUP_SOCKET="+socket, "NO_COLOR=1")
	}
	// --previous needs a previous instance, health a ready web/api.
	if code, out := f.ctl(t, "restart", "web/api"); code != 0 {
		t.Fatalf("setup: restart web/api: %d %s", code, out)
	}
	if code, out := f.ctl(t, "wait", "--for", "ready", "--timeout", "1m"); code != 0 {
		t.Fatalf("setup: wait --for ready: %d %s", code, out)
	}
	for _, l := range append(append(first, stops...), starts...) {
		runExampleLine(t, repo, env(f.socket), f.socket, l, "")
	}
	for _, l := range ups {
		// up takes PODSUP_SOCKET over the file's: a socket of its own.
		own := filepath.Join(t.TempDir(), "up.sock")
		runExampleLine(t, repo, env(own), own, l, own)
	}
	for _, l := range shutdowns {
		g := startUp(t, examplesConfig)
		runExampleLine(t, repo, env(g.socket), g.socket, l, "")
		if e := g.up.wait(t); e.Code() != 0 {
			t.Errorf("%s: podsup up then exited %s", l, e)
		}
	}
}

// follows is whether an example runs until stopped: up, logs -f,
// events -f, status -w.
func follows(line string) bool {
	podsup, _, _ := strings.Cut(stripComment(line), "|")
	w := strings.Fields(podsup)
	if len(w) < 2 || w[0] != "podsup" {
		return false
	}
	has := func(flags ...string) bool {
		for _, a := range w[2:] {
			if slices.Contains(flags, a) {
				return true
			}
		}
		return false
	}
	switch w[1] {
	case "up":
		return true
	case "logs", "events":
		return has("-f", "--follow")
	case "status":
		return has("-w", "--watch")
	}
	return false
}

// runExampleLine runs one example line through bash in the repository's
// root (the examples name examples/...). upSocket, for a podsup up line,
// is its socket: it must answer there before it is stopped.
func runExampleLine(t *testing.T, repo string, env []string, socket, line, upSocket string) {
	t.Helper()
	word := strings.Fields(line)[0]
	switch {
	case word == "podsup":
	case word == "curl":
		line = strings.ReplaceAll(line, "/run/podsup/podsup.sock", socket) + " >/dev/null"
	case notRunHere[word]:
		t.Logf("not run here: %s", line)
		return
	default:
		t.Errorf("example line %q is neither a podsup command nor one this test knows", line)
		return
	}
	long := follows(line)
	script := line
	if long {
		// exec: SIGTERM reaches podsup, not a shell that would orphan it.
		script = "exec " + stripComment(line)
	}
	c := &proc.Cmd{Path: "/bin/bash", Args: []string{"bash", "-o", "pipefail", "-c", script}, RunAs: proc.RunAs{Env: env, Dir: repo}}
	s := start(t, c)
	if !long {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		outc := make(chan string, 1)
		go func() { outc <- s.rest(t) }() // read as it comes: a full pipe would block it
		e, err := s.p.Wait(ctx)
		if err != nil {
			t.Errorf("%s: still running after 3m", line)
			return
		}
		out := <-outc
		if e.Code() != 0 {
			t.Errorf("%s: %s\n%s", line, e, out)
		}
		return
	}
	if upSocket != "" {
		c := api.NewClient(upSocket)
		if !eventually(func() bool { _, err := c.Version(context.Background()); return err == nil }) {
			t.Errorf("%s: never answered on its socket\n%s", line, s.sofar(t))
		}
	} else {
		select {
		case <-s.p.Done():
			t.Errorf("%s: ended (%s) where it should follow\n%s", line, s.p.Exit(), s.rest(t))
			return
		case <-time.After(3 * time.Second):
		}
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if e := s.wait(t); e.Code() != 0 {
		t.Errorf("%s: after SIGTERM: %s\n%s", line, e, s.rest(t))
	}
}

// stripComment drops a trailing "  # ..." outside quotes.
func stripComment(l string) string {
	var q rune
	for i, r := range l {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '\'' || r == '"':
			q = r
		case r == '#' && i > 0 && l[i-1] == ' ':
			return strings.TrimSpace(l[:i])
		}
	}
	return l
}

// helpExampleLines are the example lines of every command's help and of
// every man page, without comments and blank lines, each once.
func helpExampleLines(t *testing.T) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	add := func(text, where string) {
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") || seen[l] {
				continue
			}
			seen[l] = true
			out = append(out, l)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add(c.Example, c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	pages, _ := filepath.Glob(filepath.Join("..", "..", "man", "*.1"))
	if len(pages) == 0 {
		t.Fatal("no man pages in man/")
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, ex, ok := strings.Cut(string(b), ".SH EXAMPLES\n.nf\n")
		if !ok {
			continue
		}
		ex, _, _ = strings.Cut(ex, "\n.fi")
		ex = strings.NewReplacer(`\&`, "", `\e`, `\`, `\-`, "-").Replace(ex)
		add(ex, p)
	}
	return out
}
