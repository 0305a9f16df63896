package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const module = "github.com/podsup/podsup/"

// The packages that need only the process primitives link package proc
// and neither layer of the runtime above it: pid1 (podsup run), execrun
// (exec probes and hooks) and hooks must not carry the sandbox runtime, its
// holder and namespaces, nor the cgroup code.
func TestPrimitiveUsersLinkNoRuntime(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("cannot list what they link: the go tool is not in PATH (%v)", err)
	}
	users := []string{module + "pid1", module + "internal/execrun", module + "hooks"}
	for _, user := range users {
		out := goList(t, goTool, "list", "-deps", "-f", `{{.ImportPath}}|{{join .Imports " "}}`, user)
		importers := map[string][]string{}
		var linked []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			path, imports, ok := strings.Cut(line, "|")
			if !ok {
				t.Fatalf("unexpected line from go list: %q", line)
			}
			linked = append(linked, path)
			for _, imp := range strings.Fields(imports) {
				importers[imp] = append(importers[imp], path)
			}
		}
		if !slices.Contains(linked, module+"sandbox/proc") {
			t.Fatalf("go list does not show %ssandbox/proc among what %s links, so this test checks nothing:\n%s", module, user, out)
		}
		for _, runtime := range []string{module + "sandbox", module + "sandbox/cgroups"} {
			if slices.Contains(linked, runtime) {
				slices.Sort(importers[runtime])
				t.Errorf("%s links %s (imported by %s)", user, runtime, strings.Join(importers[runtime], ", "))
			}
		}
	}
}

// goList runs the go tool to completion through Start (podsup has one
// reaper) and returns its stdout; a failure fails the test with its stderr.
func goList(t *testing.T, goTool string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(&Cmd{Path: goTool, Args: append([]string{"go"}, args...), Stdout: outW, Stderr: errW})
	outW.Close()
	errW.Close()
	if err != nil {
		t.Fatalf("unable to start %s: %v", goTool, err)
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = stdout.ReadFrom(outR); outR.Close(); done <- struct{}{} }()
	go func() { _, _ = stderr.ReadFrom(errR); errR.Close(); done <- struct{}{} }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
		t.Fatalf("go %v: %v", args, err)
	}
	<-done
	<-done
	if e.Code() != 0 {
		t.Fatalf("go %v: %s\n%s", args, e, stderr.String())
	}
	return stdout.String()
}
