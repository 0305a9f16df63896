package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// The real main dispatches the hidden holder mode: a sandbox whose holder
// is this binary run as podsup works, and its PID 1 is "podsup __podsup_init".
func TestMainRunsTheSandboxHolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates PID and mount namespaces (CI runs as root)")
	}
	t.Setenv(asPodsupEnv, "1") // the holder inherits it and so runs main()
	rt, err := sandbox.NewRuntime(sandbox.Options{
		Instance:   fmt.Sprintf("cmdtest-%d", os.Getpid()),
		HolderPath: testExe(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = rt.CreateSandbox(ctx, "s", spec.Sandbox{Namespaces: []string{"pid", "mount"}, Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}})
	if err != nil {
		t.Fatal(err)
	}
	spawn := func(c *proc.Cmd) (*proc.Process, error) { return rt.Spawn("s", c) }
	res, err := execrun.SandboxRunner{Spawn: spawn}.Run(ctx, execrun.Request{Argv: []string{"cat", "/proc/1/cmdline"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(string(res.Output), "\x00", " "); !strings.Contains(got, sandbox.HolderArg) {
		t.Errorf("PID 1 of the sandbox runs %q; want the holder", got)
	}
}
