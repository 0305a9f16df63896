package proc

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// allowAll is the smallest filter: it changes no call's outcome, but the
// command runs under a filter (Seccomp: 2). Package seccomp tests real
// profiles.
var allowAll = &SeccompFilter{Name: "allow-all", AllowsClone3: true,
	Program: []SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}}

const statusScript = `cat /proc/self/status; cat /proc/self/limits; echo "oom=$(cat /proc/self/oom_score_adj)"; touch "$F"`

func capHex(s CapSet) string { return strings.Repeat("0", 16-len(hexU(uint64(s)))) + hexU(uint64(s)) }

func hexU(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v >>= 4 {
		b = append([]byte{digits[v&15]}, b...)
	}
	return string(b)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: only root has capabilities to narrow and users to become")
	}
}

// Every setting of a Security reaches the command, as /proc shows it, for
// a root command and for one of another user; a command without one keeps
// podsup's.
func TestSecurityReachesTheCommand(t *testing.T) {
	requireRoot(t)
	caps := CapSet(1<<unix.CAP_CHOWN | 1<<unix.CAP_NET_BIND_SERVICE)
	umask := uint32(0o027)
	oom := 500
	sec := &Security{Capabilities: &caps, NoNewPrivs: true, Seccomp: allowAll, Umask: &umask, OOMScoreAdj: &oom}
	for _, tc := range []struct {
		name  string
		runAs RunAs
		want  map[string]string
	}{
		{"root", RunAs{}, map[string]string{
			"CapBnd": capHex(caps), "CapPrm": capHex(caps), "CapEff": capHex(caps), "CapInh": capHex(caps), "CapAmb": capHex(0),
			"NoNewPrivs": "1", "Seccomp": "2", "Umask": "0027", "Uid": "0\t0\t0\t0"}},
		{"non-root", RunAs{User: "65534", Group: "65534", Groups: []string{"4242", "4343"}}, map[string]string{
			"CapBnd": capHex(caps), "CapPrm": capHex(caps), "CapEff": capHex(caps), "CapAmb": capHex(caps),
			"NoNewPrivs": "1", "Seccomp": "2", "Umask": "0027", "Uid": "65534\t65534\t65534\t65534", "Gid": "65534\t65534\t65534\t65534"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "podsup-umask-") // t.TempDir's parent is root's alone
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			_ = os.Chmod(dir, 0o777)
			file := filepath.Join(dir, "f")
			runAs := tc.runAs
			runAs.Env = []string{"PATH=/usr/bin:/bin", "F=" + file}
			out, code := runOut(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", statusScript}, RunAs: runAs, Security: sec})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			for field, want := range tc.want {
				if got := statusField(out, field); got != want {
					t.Errorf("%s: %q, want %q", field, got, want)
				}
			}
			if len(tc.runAs.Groups) > 0 {
				groups := strings.Fields(statusField(out, "Groups"))
				for _, g := range tc.runAs.Groups {
					if !contains(groups, g) {
						t.Errorf("Groups %v lack supplementary group %s", groups, g)
					}
				}
			}
			if !strings.Contains(out, "oom=500") {
				t.Errorf("oom_score_adj not 500:\n%s", out)
			}
			if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o640 {
				t.Errorf("a file the command made: %v %v, want mode 0640 (umask 027)", st, err)
			}
		})
	}
	// Without a Security: podsup's own.
	out, _ := runOut(t, &Cmd{Path: "/bin/cat", Args: []string{"cat", "/proc/self/status"}})
	for field, want := range map[string]string{"NoNewPrivs": "0", "Seccomp": "0"} {
		if got := statusField(out, field); got != want {
			t.Errorf("without a Security, %s: %q, want %q", field, got, want)
		}
	}
	if statusField(out, "CapBnd") == capHex(caps) {
		t.Errorf("without a Security, the bounding set is narrowed")
	}
}

// hostrt starts every host process with Forker: HostForker; a Security
// then forks on its profile's thread in podsup's own namespaces, whether
// or not the lean thread is in use.
func TestSecurityWithTheHostForker(t *testing.T) {
	requireRoot(t)
	for _, above := range []int64{1 << 30, 0} { // lean thread unused, then used
		old := leanForkAbove.Swap(above)
		nnp := &Security{NoNewPrivs: true}
		out, code := runOut(t, &Cmd{Path: "/bin/cat", Args: []string{"cat", "/proc/self/status"}, Forker: HostForker, Security: nnp})
		leanForkAbove.Store(old)
		if code != 0 {
			t.Fatalf("lean above %d: exit %d: %s", above, code, out)
		}
		if got := statusField(out, "NoNewPrivs"); got != "1" {
			t.Errorf("lean above %d: NoNewPrivs %q, want 1", above, got)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Rlimits go through the pre-exec shim, with the filter then installed
// there; the command still gets its argv and environment.
func TestSecurityRlimits(t *testing.T) {
	sec := &Security{Rlimits: []Rlimit{{Resource: unix.RLIMIT_NOFILE, Soft: 100, Hard: 200}, {Resource: unix.RLIMIT_CORE, Soft: 0, Hard: 0}}, Seccomp: allowAll}
	out, code := runOut(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `echo "x=$X"; cat /proc/self/limits /proc/self/status`},
		RunAs: RunAs{Env: []string{"X=1", "PATH=/usr/bin:/bin"}}, Security: sec})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "x=1") {
		t.Errorf("environment lost on the way: %s", out)
	}
	for _, want := range []string{`Max open files\s+100\s+200\s`, `Max core file size\s+0\s+0\s`} {
		if !regexpMatch(want, out) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if got := statusField(out, "Seccomp"); got != "2" {
		t.Errorf("Seccomp %q under the shim, want 2", got)
	}
}

// A Security Start cannot apply is refused, naming the setting.
func TestSecurityErrorsNameTheSetting(t *testing.T) {
	bad := uint32(0o1000)
	oom := 2000
	for setting, sec := range map[string]*Security{
		"umask":         {Umask: &bad},
		"oom_score_adj": {OOMScoreAdj: &oom},
		"rlimits":       {Rlimits: []Rlimit{{Resource: unix.RLIMIT_NOFILE, Soft: 2, Hard: 1}}},
		"seccomp":       {Seccomp: &SeccompFilter{Name: "empty"}},
	} {
		_, err := Start(&Cmd{Path: "/bin/true", Security: sec})
		var se *SecurityError
		if !errors.As(err, &se) || se.Setting != setting {
			t.Errorf("%s: %v, want a SecurityError naming it", setting, err)
		}
	}
}

// Spawns of one profile share one thread, which ends once idle.
func TestProfileThreadsAreSharedAndEnd(t *testing.T) {
	old := profileThreadIdle
	profileThreadIdle = 100 * time.Millisecond
	defer func() { profileThreadIdle = old }()
	umask := uint32(0o077)
	threads := func() int {
		profileThreads.mu.Lock()
		defer profileThreads.mu.Unlock()
		n := 0
		for k := range profileThreads.m {
			if strings.HasPrefix(k.profile, "u77") {
				n++
			}
		}
		return n
	}
	for i := 0; i < 3; i++ {
		if _, code := runOut(t, &Cmd{Path: "/bin/true", Security: &Security{Umask: &umask}}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if n := threads(); n != 1 {
			t.Fatalf("%d threads for one profile, want 1", n)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for threads() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("an idle profile thread did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A profile thread held in a fork (a child frozen before its exec) does
// not hold the next start of its profile: after forkGatePatience that
// start retires the thread and forks on a new one, and the held thread
// ends once its fork is done.
func TestProfileThreadHeldInAForkHoldsNoOtherStart(t *testing.T) {
	umask := uint32(0o071)
	sec := &Security{Umask: &umask}
	tp := threadProfile{umask: sec.Umask}
	held := make(chan struct{})
	holding := make(chan *profileThread, 1)
	forked := make(chan error, 1)
	go func() {
		_, err := forkOnProfileThread(nil, tp, func(pt *profileThread) error {
			holding <- pt
			<-held // as ForkExec waits for a child that never execs
			return errors.New("held fork")
		})
		forked <- err
	}()
	first := <-holding
	done := make(chan int, 1)
	go func() {
		_, code := runOut(t, &Cmd{Path: "/bin/true", Security: sec})
		done <- code
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("the second start: exit %d", code)
		}
	case <-time.After(20 * time.Second):
		close(held)
		t.Fatal("a start waited for the profile thread held in another fork")
	}
	profileThreads.mu.Lock()
	retired, current := first.retired, profileThreads.m[first.key]
	profileThreads.mu.Unlock()
	if !retired || current == first {
		t.Errorf("the held thread: retired %v, still its profile's thread %v", retired, current == first)
	}
	close(held)
	if err := <-forked; err == nil || err.Error() != "held fork" {
		t.Errorf("the held fork returned %v", err)
	}
	first.release() // as Start does for a fork that failed
	select {
	case <-first.done:
	case <-time.After(10 * time.Second):
		t.Error("the retired thread did not end once its fork was done and nothing used it")
	}
}

// A thread whose filter is installed stays out of the rest of podsup: a
// Start without a Security right after still runs unfiltered, whichever
// thread runs it.
func TestProfileThreadStateDoesNotSpread(t *testing.T) {
	for i := 0; i < 20; i++ {
		if _, code := runOut(t, &Cmd{Path: "/bin/true", Security: &Security{NoNewPrivs: true, Seccomp: allowAll}}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		out, _ := runOut(t, &Cmd{Path: "/bin/cat", Args: []string{"cat", "/proc/self/status"}})
		if statusField(out, "Seccomp") != "0" || statusField(out, "NoNewPrivs") != "0" {
			t.Fatalf("a command without a Security runs filtered:\n%s", out)
		}
	}
	// Nor is podsup itself.
	b, _ := os.ReadFile("/proc/self/status")
	if statusField(string(b), "NoNewPrivs") != "0" {
		t.Error("podsup's main thread has no_new_privs")
	}
	_ = syscall.Getpid
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
