package seccomp

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"golang.org/x/sys/unix"
)

func nr(t *testing.T, name string) int32 {
	t.Helper()
	n, ok := syscalls[name]
	if !ok {
		t.Fatalf("no %s on %s", name, runtime.GOARCH)
	}
	return int32(n)
}

func run(t *testing.T, f *proc.SeccompFilter, d Data) uint32 {
	t.Helper()
	if d.Arch == 0 {
		d.Arch = auditArch
	}
	act, err := Run(f.Program, d, bigEndian)
	if err != nil {
		t.Fatal(err)
	}
	return act
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// runtime/default decides as Docker's profile does, arguments included,
// with and without CAP_SYS_ADMIN.
func TestRuntimeDefaultDecisions(t *testing.T) {
	plain, err := Named(RuntimeDefault, 0)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := Named(RuntimeDefault, 1<<unix.CAP_SYS_ADMIN)
	if err != nil {
		t.Fatal(err)
	}
	cloneArg := 0
	if runtime.GOARCH == "s390x" {
		cloneArg = 1
	}
	withArg := func(i int, v uint64) [6]uint64 { var a [6]uint64; a[i] = v; return a }
	for _, tc := range []struct {
		name string
		f    *proc.SeccompFilter
		d    Data
		want uint32
	}{
		{"read", plain, Data{Nr: nr(t, "read")}, allow},
		{"keyctl", plain, Data{Nr: nr(t, "keyctl")}, eperm},
		{"unshare", plain, Data{Nr: nr(t, "unshare")}, eperm},
		{"unshare as admin", admin, Data{Nr: nr(t, "unshare")}, allow},
		{"clone a thread", plain, Data{Nr: nr(t, "clone"), Args: withArg(cloneArg, unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND)}, allow},
		{"clone a user namespace", plain, Data{Nr: nr(t, "clone"), Args: withArg(cloneArg, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD))}, eperm},
		{"clone a namespace, high bits set", plain, Data{Nr: nr(t, "clone"), Args: withArg(cloneArg, 1<<40|unix.CLONE_NEWNET)}, eperm},
		{"clone a namespace as admin", admin, Data{Nr: nr(t, "clone"), Args: withArg(cloneArg, unix.CLONE_NEWNET)}, allow},
		{"clone3", plain, Data{Nr: nr(t, "clone3")}, enosys},
		{"clone3 as admin", admin, Data{Nr: nr(t, "clone3")}, allow},
		{"socket AF_INET", plain, Data{Nr: nr(t, "socket"), Args: withArg(0, unix.AF_INET)}, allow},
		{"socket AF_VSOCK", plain, Data{Nr: nr(t, "socket"), Args: withArg(0, unix.AF_VSOCK)}, eperm},
		{"socket AF_VSOCK in the high half", plain, Data{Nr: nr(t, "socket"), Args: withArg(0, 1<<32|unix.AF_VSOCK)}, allow},
		{"personality 0", plain, Data{Nr: nr(t, "personality")}, allow},
		{"personality query", plain, Data{Nr: nr(t, "personality"), Args: withArg(0, 0xffffffff)}, allow},
		{"personality READ_IMPLIES_EXEC", plain, Data{Nr: nr(t, "personality"), Args: withArg(0, 0x0400000)}, eperm},
		{"another architecture", plain, Data{Nr: nr(t, "read"), Arch: 0x12345678}, unix.SECCOMP_RET_KILL_PROCESS},
		{"a number beyond the table", plain, Data{Nr: 4000}, eperm},
	} {
		if got := run(t, tc.f, tc.d); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if runtime.GOARCH == "amd64" {
		if got := run(t, plain, Data{Nr: 0x40000000 | nr(t, "read")}); got != unix.SECCOMP_RET_KILL_PROCESS {
			t.Errorf("an x32 call: %#x, want kill", got)
		}
	}
	if plain.AllowsClone3 || !admin.AllowsClone3 {
		t.Errorf("AllowsClone3: %v without CAP_SYS_ADMIN, %v with", plain.AllowsClone3, admin.AllowsClone3)
	}
}

// Each comparison, on 64-bit values whose halves differ, against Go's.
func TestArgumentComparisons(t *testing.T) {
	values := []uint64{0, 1, 5, 0xffffffff, 1 << 32, 1<<32 | 5, 5 << 32, math.MaxUint64}
	ops := map[string]func(arg, v uint64) bool{
		"SCMP_CMP_EQ": func(a, v uint64) bool { return a == v },
		"SCMP_CMP_NE": func(a, v uint64) bool { return a != v },
		"SCMP_CMP_LT": func(a, v uint64) bool { return a < v },
		"SCMP_CMP_LE": func(a, v uint64) bool { return a <= v },
		"SCMP_CMP_GT": func(a, v uint64) bool { return a > v },
		"SCMP_CMP_GE": func(a, v uint64) bool { return a >= v },
	}
	for op, want := range ops {
		for _, v := range values {
			f, err := Compile(&Profile{DefaultAction: "SCMP_ACT_ALLOW", Syscalls: []Syscall{
				{Names: []string{"getppid"}, Action: "SCMP_ACT_ERRNO", Args: []Arg{{Index: 3, Value: v, Op: op}}}}}, "test", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range values {
				var args [6]uint64
				args[3] = a
				denied := run(t, f, Data{Nr: nr(t, "getppid"), Args: args}) == eperm
				if denied != want(a, v) {
					t.Errorf("%#x %s %#x: filter says %v", a, op, v, denied)
				}
			}
		}
	}
	// MASKED_EQ: value is the mask, valueTwo the datum.
	f, err := Compile(&Profile{DefaultAction: "SCMP_ACT_ALLOW", Syscalls: []Syscall{
		{Names: []string{"getppid"}, Action: "SCMP_ACT_ERRNO", Args: []Arg{{Index: 0, Value: 0xff000000f0, ValueTwo: 0x1200000010, Op: "SCMP_CMP_MASKED_EQ"}}}}}, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[uint64]bool{0x1200000010: true, 0x12abcdef1f: true, 0x1300000010: false, 0x1200000020: false} {
		if got := run(t, f, Data{Nr: nr(t, "getppid"), Args: [6]uint64{a}}) == eperm; got != want {
			t.Errorf("masked %#x: %v, want %v", a, got, want)
		}
	}
}

// A profile file in the OCI/Docker format: actions, errnoRet, unknown
// names skipped, another architecture's profile refused.
func TestProfileFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	os.WriteFile(path, []byte(`{
		"defaultAction": "SCMP_ACT_ALLOW",
		"architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64", "SCMP_ARCH_X86", "SCMP_ARCH_ARM", "SCMP_ARCH_RISCV64", "SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390X"],
		"syscalls": [
			{"names": ["mkdirat", "no_such_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
			{"names": ["keyctl"], "action": "SCMP_ACT_KILL_PROCESS"},
			{"name": "add_key", "action": "SCMP_ACT_TRAP"},
			{"names": ["request_key"], "action": "SCMP_ACT_LOG"}
		]}`), 0o644)
	f, err := Load(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint32{"mkdirat": unix.SECCOMP_RET_ERRNO | 13, "keyctl": unix.SECCOMP_RET_KILL_PROCESS,
		"add_key": unix.SECCOMP_RET_TRAP, "request_key": unix.SECCOMP_RET_LOG, "read": allow} {
		if got := run(t, f, Data{Nr: nr(t, name)}); got != want {
			t.Errorf("%s: %#x, want %#x", name, got, want)
		}
	}
	os.WriteFile(path, []byte(`{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_MIPS"]}`), 0o644)
	if _, err := Load(path, 0); err == nil {
		t.Error("a profile for another architecture compiled")
	}
	os.WriteFile(path, []byte(`{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_NOPE"}]}`), 0o644)
	if _, err := Load(path, 0); err == nil || !strings.Contains(err.Error(), "SCMP_ACT_NOPE") {
		t.Errorf("an unknown action: %v", err)
	}
}

// A profile that denies what podsup's spawning thread needs is refused,
// naming the call.
func TestProfileDenyingForkSyscallsIsRefused(t *testing.T) {
	_, err := Compile(&Profile{DefaultAction: "SCMP_ACT_ALLOW", Syscalls: []Syscall{{Names: []string{"futex"}, Action: "SCMP_ACT_KILL_PROCESS"}}}, "p", 0)
	if !errors.Is(err, ErrForkSyscallDenied) || !strings.Contains(err.Error(), "futex") {
		t.Errorf("%v, want ErrForkSyscallDenied naming futex", err)
	}
	if f, err := Named(Unconfined, 0); f != nil || err != nil {
		t.Errorf("unconfined: %v %v, want no filter", f, err)
	}
}

// A profile that kills what it does not list must never be installed on a
// podsup thread (a Go runtime call it lacks would end podsup): it is
// marked for the pre-exec shim. runtime/default answers EPERM instead.
func TestKillByDefaultProfilesAreMarked(t *testing.T) {
	var allow []string
	allow = append(allow, proc.ForkSyscalls...)
	for _, def := range []string{"SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL", "SCMP_ACT_TRAP"} {
		f, err := Compile(&Profile{DefaultAction: def, Syscalls: []Syscall{{Names: allow, Action: "SCMP_ACT_ALLOW"}}}, "p", 0)
		if err != nil || !f.KillsUnlisted {
			t.Errorf("defaultAction %s: %+v %v, want KillsUnlisted", def, f, err)
		}
	}
	if f, err := Named(RuntimeDefault, 0); err != nil || f.KillsUnlisted {
		t.Errorf("runtime/default: KillsUnlisted %v (%v), want false", f != nil && f.KillsUnlisted, err)
	}
}

// A real process under runtime/default: what Docker denies fails with
// EPERM, the rest runs.
func TestRuntimeDefaultInTheKernel(t *testing.T) {
	if _, err := os.Stat("/usr/bin/unshare"); err != nil {
		t.Skip("needs util-linux's unshare")
	}
	f, err := Named(RuntimeDefault, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := func(argv ...string) (string, int) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		p, err := proc.Start(&proc.Cmd{Path: argv[0], Args: argv, Stdout: w, Stderr: w, Security: &proc.Security{Seccomp: f, NoNewPrivs: true}})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		select {
		case <-p.Done():
		case <-time.After(time.Minute):
			t.Fatal("did not end")
		}
		return string(out), p.Exit().Code()
	}
	if out, code := start("/bin/sh", "-c", "grep Seccomp: /proc/self/status; true"); code != 0 || !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("a shell under the filter: %d %q", code, out)
	}
	if out, code := start("/usr/bin/unshare", "--user", "true"); code == 0 || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("unshare --user under runtime/default: exit %d %q, want EPERM", code, out)
	}
}
