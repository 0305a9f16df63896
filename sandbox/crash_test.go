package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// crashReport is what the "crashy-podsup" helper prints before it waits to
// be SIGKILLed.
type crashReport struct {
	Holder  int   `json:"holder"`  // holder of sandbox "ns" (pid, mount)
	InNS    []int `json:"in_ns"`   // processes in "ns"
	OnHost  []int `json:"on_host"` // processes in "host" (no namespaces)
	Problem string
}

// crashy-podsup is a podsup in miniature: a runtime of instance args[0]
// with a namespaced and a host sandbox, a process in each plus a setsid
// daemon on the host side. It reports pids and waits for SIGKILL.
var _ = testproc.Register("crashy-podsup", func(args []string) int {
	out := json.NewEncoder(os.Stdout)
	fail := func(err error) int { _ = out.Encode(crashReport{Problem: err.Error()}); return 1 }
	rt, err := NewRuntime(Options{Instance: args[0], HolderStderr: os.Stderr})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if err := rt.CreateSandbox(ctx, "ns", spec.Sandbox{Namespaces: []string{"pid", "mount"}}); err != nil {
		return fail(err)
	}
	if err := rt.CreateSandbox(ctx, "host", spec.Sandbox{}); err != nil {
		return fail(err)
	}
	var rep crashReport
	for _, p := range []struct{ sb, id, helper string }{{"ns", "a", "sleep"}, {"host", "b", "sleep"}, {"host", "c", "daemon-and-wait"}} {
		cfg := ProcessConfig{Sandbox: p.sb, Command: helperArgv(), RunAs: proc.RunAs{Env: testproc.HelperEnv(p.helper)}}
		if err := rt.CreateProcess(ctx, p.id, cfg); err != nil {
			return fail(err)
		}
		if err := rt.StartProcess(ctx, p.id); err != nil {
			return fail(err)
		}
	}
	st, _ := rt.SandboxStatus("ns")
	rep.Holder = st.HolderPid
	for _, ps := range rt.listProcesses(ProcessFilter{}) {
		if ps.Sandbox == "ns" {
			rep.InNS = append(rep.InNS, ps.Pid)
		} else {
			rep.OnHost = append(rep.OnHost, ps.Pid)
		}
	}
	// The daemon: everything in the host sandbox's cgroup but its two
	// processes.
	hs, _ := rt.SandboxStatus("host")
	if rt.CgroupsEnabled() {
		time.Sleep(50 * time.Millisecond) // let the daemon be forked
		rep.OnHost = cgroupProcsOf(hs.Cgroup)
	}
	_ = out.Encode(rep)
	time.Sleep(5 * time.Minute)
	return 0
})

func cgroupProcsOf(dir string) []int {
	var pids []int
	for _, s := range cgroupProcs(dir) {
		var pid int
		if _, err := fmt.Sscan(s, &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Killing podsup with SIGKILL and starting it again leaves no process of
// the old run alive: holders exit on control-socket EOF (taking their PID
// namespaces along) and the new runtime's sweep kills what ran without
// namespaces.
func TestSIGKILLedPodsupLeavesNothingAfterRestart(t *testing.T) {
	testproc.NeedRoot(t)
	instance := testInstancePrefix() + "crash"
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := helperCmd(t, "crashy-podsup", instance)
	c.Stdout, c.Stderr = w, os.Stderr
	podsup, err := proc.Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = podsup.Signal(9) })
	var rep crashReport
	if err := json.NewDecoder(bufio.NewReader(r)).Decode(&rep); err != nil || rep.Problem != "" {
		t.Fatalf("crashy podsup: %+v %v", rep, err)
	}
	if rep.Holder <= 0 || len(rep.InNS) != 1 || len(rep.OnHost) < 2 {
		t.Fatalf("crashy podsup reported %+v", rep)
	}
	all := append(append([]int{rep.Holder}, rep.InNS...), rep.OnHost...)
	for _, pid := range all {
		if !testproc.Alive(pid) {
			t.Fatalf("pid %d of %+v not running before the crash", pid, rep)
		}
	}

	if err := podsup.Signal(9); err != nil {
		t.Fatal(err)
	}
	<-podsup.Done()
	// The holder sees EOF and exits; its PID namespace goes with it.
	for _, pid := range append([]int{rep.Holder}, rep.InNS...) {
		if !testproc.Eventually(10*time.Second, func() bool { return !testproc.Alive(pid) }) {
			t.Errorf("pid %d (holder or inside its namespace) alive after podsup's death", pid)
		}
	}

	rt, err := NewRuntime(Options{Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	}()
	if !rt.CgroupsEnabled() {
		t.Skip("without cgroups nothing finds the old run's host processes (known limit)")
	}
	for _, pid := range all {
		if !testproc.Eventually(10*time.Second, func() bool { return !testproc.Alive(pid) }) {
			t.Errorf("pid %d of the old run alive after the new runtime's sweep", pid)
		}
	}
}
