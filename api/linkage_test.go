package api_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

const module = "github.com/podsup/podsup/"

// clientMayLink are the only packages outside the standard library that a
// program built on package api may link: the wire types and the client
// need nothing of podsup's runtime, nor its third-party libraries.
var clientMayLink = map[string]bool{
	module + "api":                      true,
	module + "api/internal/clientcheck": true,
	module + "spec":                     true,
}

// TestClientLinksNoRuntime lists, with `go list -deps`, every package a
// minimal client program (internal/clientcheck) links, and fails naming
// each one that is neither standard nor in clientMayLink: a Go program
// that only talks to a running podsup must not carry the supervisor, the
// sandbox or the cgroup code.
func TestClientLinksNoRuntime(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("cannot list what a client links: the go tool is not in PATH (%v)", err)
	}
	out := runGo(t, goTool, "list", "-deps", "-f", `{{.ImportPath}}|{{.Standard}}|{{join .Imports " "}}`, "./internal/clientcheck")
	importers := map[string][]string{}
	var linked []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		path, rest, ok := strings.Cut(line, "|")
		standard, imports, ok2 := strings.Cut(rest, "|")
		if !ok || !ok2 {
			t.Fatalf("unexpected line from go list: %q", line)
		}
		for _, imp := range strings.Fields(imports) {
			importers[imp] = append(importers[imp], path)
		}
		if standard != "true" {
			linked = append(linked, path)
		}
	}
	if !slices.Contains(linked, module+"api") {
		t.Fatalf("go list does not show %sapi among the client's packages, so this test checks nothing:\n%s", module, out)
	}
	for _, p := range linked {
		if !clientMayLink[p] {
			slices.Sort(importers[p])
			t.Errorf("a program that only uses package api links %s (imported by %s)", p, strings.Join(importers[p], ", "))
		}
	}
}

// runGo runs the go tool to completion through package proc (podsup has
// one reaper: nothing else may wait for a process) and returns its stdout;
// a failure fails the test with its stderr.
func runGo(t *testing.T, goTool string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	p, err := proc.Start(&proc.Cmd{Path: goTool, Args: append([]string{"go"}, args...), Stdout: stdout, Stderr: stderr})
	if err != nil {
		t.Fatalf("unable to start %s: %v", goTool, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exit, err := p.Wait(ctx)
	if err != nil {
		_ = p.KillTree(syscall.SIGKILL) // ours, by its own process group
		<-p.Done()
		t.Fatalf("go %s did not finish within 5 minutes", strings.Join(args, " "))
	}
	errOut, _ := os.ReadFile(stderr.Name())
	if exit.Code() != 0 {
		t.Fatalf("go %s: exit %d:\n%s", strings.Join(args, " "), exit.Code(), errOut)
	}
	b, err := os.ReadFile(stdout.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
