package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/sandbox/seccomp"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// useSubIDs points the runtime at subuid and subgid files of the test's
// own with one line for user, and restores the real ones after.
func useSubIDs(t *testing.T, user string, start, count int) {
	t.Helper()
	dir := t.TempDir()
	line := fmt.Sprintf("%s:%d:%d\n", user, start, count)
	for _, f := range []string{"subuid", "subgid"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oldU, oldG := subUIDFile, subGIDFile
	subUIDFile, subGIDFile = filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid")
	t.Cleanup(func() { subUIDFile, subGIDFile = oldU, oldG })
}

// newUserNSRuntime is a test runtime whose holder is a copy of the test
// binary that the namespace's root (an unprivileged uid on the host) may
// execute: go test's build directory is root's alone.
func newUserNSRuntime(t *testing.T) *Runtime {
	t.Helper()
	dir, err := os.MkdirTemp("", "podsup-userns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	holder := filepath.Join(dir, "holder")
	dst, err := os.OpenFile(holder, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	rt, err := NewRuntime(Options{
		Instance:     testInstancePrefix() + strconv.FormatInt(instanceSeq.Add(1), 10),
		HolderStderr: os.Stderr,
		HolderPath:   holder,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("closing runtime: %v", err)
		}
	})
	return rt
}

// statusField is a field of /proc/PID/status, read from the host.
func statusField(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return ""
}

func startShell(t *testing.T, rt *Runtime, sb, id, script string, sec *proc.Security, onExit func(ProcessStatus)) ProcessStatus {
	t.Helper()
	cfg := ProcessConfig{Sandbox: sb, Command: []string{"/bin/sh", "-c", script}, Security: sec, Stderr: os.Stderr, OnExit: onExit}
	if err := rt.CreateProcess(testCtx(t), id, cfg); err != nil {
		t.Fatalf("CreateProcess(%s): %v", id, err)
	}
	if err := rt.StartProcess(testCtx(t), id); err != nil {
		t.Fatalf("StartProcess(%s): %v", id, err)
	}
	st, err := rt.ProcessStatus(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A sandbox with a user namespace: root inside is the range's first uid
// on the host, the process is podsup's child with the capabilities asked
// for, a mount inside works, exit codes and SIGKILL arrive, and nothing
// is left once the sandbox is deleted.
func TestUserNamespaceSandbox(t *testing.T) {
	testproc.NeedRoot(t)
	const base = 1_500_000_000
	useSubIDs(t, "podsup-test", base, 2*spec.SubIDsPerSandbox)
	rt := newUserNSRuntime(t)
	cfg := spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc"}, Hostname: "userns",
		Mounts:        []spec.Mount{{Type: "proc", Target: "/proc"}, {Type: "tmpfs", Target: "/mnt"}},
		UserNamespace: true, SubIDUser: "podsup-test"}
	mustCreateSandbox(t, rt, "u", cfg)
	mustCreateSandbox(t, rt, "v", cfg)

	exits := make(chan ProcessStatus, 4)
	onExit := func(st ProcessStatus) { exits <- st }
	caps := proc.CapSet(1<<unix.CAP_SYS_ADMIN | 1<<unix.CAP_KILL)
	sleeper := startShell(t, rt, "u", "sleeper", "exec sleep 300", &proc.Security{Capabilities: &caps}, onExit)
	if got := statusField(t, sleeper.Pid, "PPid"); got != strconv.Itoa(os.Getpid()) {
		t.Errorf("PPid of the sandbox's process is %s, want podsup's %d", got, os.Getpid())
	}
	if got := strings.Fields(statusField(t, sleeper.Pid, "Uid")); got[0] != strconv.Itoa(base) || got[1] != strconv.Itoa(base) {
		t.Errorf("host Uid of root in the sandbox is %v, want %d", got, base)
	}
	if got := strings.Fields(statusField(t, sleeper.Pid, "Gid")); got[0] != strconv.Itoa(base) {
		t.Errorf("host Gid of root in the sandbox is %v, want %d", got, base)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", sleeper.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); strings.Join(got, " ") != fmt.Sprintf("0 %d %d", base, spec.SubIDsPerSandbox) {
		t.Errorf("uid_map %q, want 0 %d %d", b, base, spec.SubIDsPerSandbox)
	}
	if got, want := statusField(t, sleeper.Pid, "CapEff"), fmt.Sprintf("%016x", uint64(caps)); got != want {
		t.Errorf("CapEff %s, want %s", got, want)
	}
	if got := statusField(t, sleeper.Pid, "NSpid"); len(strings.Fields(got)) != 2 || strings.Fields(got)[1] == "1" {
		t.Errorf("NSpid %q: want a pid in a new PID namespace, not its init", got)
	}

	// Placed at fork in its own cgroups, in every hierarchy podsup uses.
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", sleeper.Pid))
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, l := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		if strings.Contains(l, "/podsup-") {
			placed++
			if !strings.HasSuffix(l, "/u/sleeper") {
				t.Errorf("cgroup line %q: want the process's own cgroup u/sleeper", l)
			}
		}
	}
	if placed == 0 {
		t.Errorf("the process is in no cgroup of podsup's:\n%s", cg)
	}

	// The second sandbox has the next range.
	other := startShell(t, rt, "v", "other", "exec sleep 300", nil, nil)
	if got := strings.Fields(statusField(t, other.Pid, "Uid")); got[0] != strconv.Itoa(base+spec.SubIDsPerSandbox) {
		t.Errorf("host Uid of root in the second sandbox is %v, want %d", got, base+spec.SubIDsPerSandbox)
	}

	// A mount inside, the sandbox's proc and hostname; an exit code.
	startShell(t, rt, "u", "mounter", `mkdir -p /mnt/x && mount -t tmpfs t /mnt/x && grep -q " /mnt/x " /proc/self/mounts && [ "$(hostname)" = userns ] && [ "$(id -u)" = 0 ] && exit 7`, nil, onExit)
	if st := waitExit(t, exits, "mounter"); st.ExitCode != 7 {
		t.Errorf("mounter exited %d, want 7 (the mount, /proc or hostname failed)", st.ExitCode)
	}
	// SIGTERM reaches a process as anywhere (the holder that started it
	// must not have left it ignored).
	startShell(t, rt, "u", "termed", "exec sleep 300", nil, onExit)
	if err := rt.SignalProcess("termed", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, exits, "termed"); st.Signal != syscall.SIGTERM {
		t.Errorf("termed ended with %+v, want SIGTERM", st)
	}
	if err := rt.SignalProcess("sleeper", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, exits, "sleeper"); st.Signal != syscall.SIGKILL {
		t.Errorf("sleeper ended with %+v, want SIGKILL", st)
	}

	// A command that does not exist is a StartError, as for any sandbox.
	err = rt.CreateProcess(testCtx(t), "missing", ProcessConfig{Sandbox: "u", Command: []string{"/no/such/command"}})
	if err == nil {
		err = rt.StartProcess(testCtx(t), "missing")
	}
	if !errors.Is(err, proc.ErrCommandNotFound) {
		t.Errorf("starting a missing command: %v, want proc.ErrCommandNotFound", err)
	}

	pids := []int{other.Pid}
	for _, id := range []string{"u", "v"} {
		st, _ := rt.SandboxStatus(id)
		pids = append(pids, st.HolderPid)
		if err := rt.DeleteSandbox(testCtx(t), id); err != nil {
			t.Fatal(err)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d runs still after the sandboxes were deleted", pid)
		}
	}
	// The ranges are free again: a new sandbox gets the first.
	mustCreateSandbox(t, rt, "w", cfg)
	again := startShell(t, rt, "w", "again", "exec sleep 300", nil, nil)
	if got := strings.Fields(statusField(t, again.Pid, "Uid")); got[0] != strconv.Itoa(base) {
		t.Errorf("host Uid in a sandbox made after the others' deletion is %v, want %d again", got, base)
	}
}

func waitExit(t *testing.T, exits <-chan ProcessStatus, id string) ProcessStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		select {
		case st := <-exits:
			if st.ID == id {
				return st
			}
		case <-ctx.Done():
			t.Fatalf("no exit of %s", id)
		}
	}
}

// A process's security settings apply inside the user namespace as in
// any sandbox: its user (a uid of the namespace, so the range's base plus
// it on the host), no_new_privs, the seccomp filter, rlimits (through the
// pre-exec shim); and a command exec'd in the sandbox (Spawn) runs there
// too, its output read through the fds podsup passed.
func TestUserNamespaceSecurityAndExec(t *testing.T) {
	testproc.NeedRoot(t)
	const base = 1_600_000_000
	useSubIDs(t, spec.DefaultSubIDUser, base, spec.SubIDsPerSandbox)
	rt := newUserNSRuntime(t)
	mustCreateSandbox(t, rt, "s", spec.Sandbox{Namespaces: []string{"pid", "mount"},
		Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}, UserNamespace: true})
	filter, err := seccomp.Named(spec.SeccompRuntimeDefault, 0)
	if err != nil {
		t.Fatal(err)
	}
	none := proc.CapSet(0)
	sec := &proc.Security{Capabilities: &none, NoNewPrivs: true, Seccomp: filter,
		Rlimits: []proc.Rlimit{{Resource: unix.RLIMIT_NOFILE, Soft: 77, Hard: 77}}}
	cfg := ProcessConfig{Sandbox: "s", Command: []string{"/bin/sh", "-c", "exec sleep 300"}, Security: sec,
		RunAs: proc.RunAs{User: "1000", Group: "1000"}, Stderr: os.Stderr}
	if err := rt.CreateProcess(testCtx(t), "locked", cfg); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(testCtx(t), "locked"); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ProcessStatus("locked")
	if err != nil {
		t.Fatal(err)
	}
	// The pre-exec shim applies the rlimits and the filter, then execs
	// the shell, which execs sleep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", st.Pid))
		if strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process runs %q, not sleep", comm)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for field, want := range map[string]string{"Uid": strconv.Itoa(base + 1000), "Gid": strconv.Itoa(base + 1000),
		"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000", "CapBnd": "0000000000000000"} {
		if got := strings.Fields(statusField(t, st.Pid, field))[0]; got != want {
			t.Errorf("%s of the process is %s, want %s", field, got, want)
		}
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", st.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(limits), "Max open files            77                   77") {
		t.Errorf("rlimits not applied:\n%s", limits)
	}

	res, err := runIn(testCtx(t), rt, "s", execrun.Request{Argv: []string{"/bin/sh", "-c", "id -u; cat /proc/self/uid_map"},
		Timeout: 20 * time.Second, OutputLimit: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("0\n0 %d %d", base, spec.SubIDsPerSandbox); res.ExitCode != 0 || !strings.HasPrefix(strings.Join(strings.Fields(string(res.Output)), " "), strings.Join(strings.Fields(want), " ")) {
		t.Errorf("exec in the sandbox: exit %d, output %q, want uid 0 and the map 0 %d %d", res.ExitCode, res.Output, base, spec.SubIDsPerSandbox)
	}
}

// Ranges: one 65536-id block per sandbox, the lowest free first, the
// error naming the file and the line to add when the user has none, and
// another when every block is taken.
func TestIDAllocator(t *testing.T) {
	useSubIDs(t, "blocks", 300000, 2*spec.SubIDsPerSandbox+5)
	var a idAllocator
	r1, err1 := a.take("blocks")
	r2, err2 := a.take("blocks")
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if r1.UID != 300000 || r2.UID != 300000+spec.SubIDsPerSandbox || r2.GID != r2.UID || r1.Count != spec.SubIDsPerSandbox {
		t.Errorf("blocks %+v %+v", r1, r2)
	}
	if _, err := a.take("blocks"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a third block of two: %v", err)
	}
	a.release("blocks", r1)
	if r, err := a.take("blocks"); err != nil || r.UID != r1.UID {
		t.Errorf("after a release: %+v, %v; want the first block again", r, err)
	}
	_, err := a.take("nobody-here")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), subUIDFile) || !strings.Contains(err.Error(), "nobody-here:<start>:<count>") {
		t.Errorf("a user without a range: %v", err)
	}
}
