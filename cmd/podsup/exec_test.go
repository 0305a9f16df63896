package main

import (
	"os"
	"syscall"
	"testing"
)

// podsup exec GROUP/PROCESS runs the command the way the process runs (as
// kubectl exec runs in the container's context): in the group's sandbox,
// as the process's user and group, with its environment and working
// directory.
func TestExecRunsAsTheProcessWithItsEnvAndDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a namespace and runs a process as nobody (CI runs as root)")
	}
	f := startUp(t, `
supervisor {
  socket = "%s"
}
group "ctx" {
  sandbox {
    namespaces = ["uts"]
    hostname   = "inside"
  }
  process "app" {
    command     = ["sleep", "1000"]
    user        = "65534"
    group       = "65534"
    working_dir = "/tmp"
    env = {
      PODSUP_EXEC_TEST = "from-config"
    }
  }
}
`)
	f.waitRunning(t, "ctx", "app")
	const script = `hostname; id -u; id -g; pwd; echo "$PODSUP_EXEC_TEST"`
	code, out := f.ctl(t, "exec", "ctx/app", "--", "sh", "-c", script)
	if want := "inside\n65534\n65534\n/tmp\nfrom-config\n"; code != 0 || out != want {
		t.Errorf("exec ctx/app: exit %d, output %q; want %q", code, out, want)
	}
	// Without a process the command runs in the sandbox as podsup does.
	code, out = f.ctl(t, "exec", "ctx", "--", "sh", "-c", `hostname; id -u; echo "${PODSUP_EXEC_TEST-unset}"`)
	if want := "inside\n0\nunset\n"; code != 0 || out != want {
		t.Errorf("exec ctx: exit %d, output %q; want %q", code, out, want)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up: %s", e)
	}
}
