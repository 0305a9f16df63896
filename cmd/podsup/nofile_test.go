package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

func TestFDsAtRestCountsWhatEachProcessHolds(t *testing.T) {
	cfg := &spec.Config{Groups: []spec.Group{{Name: "g", Processes: []spec.Process{
		{Name: "plain"}, // its pipe
		{Name: "apart", Log: spec.Log{SeparateStreams: true}}, // two pipes
		{Name: "through", Log: spec.Log{Mode: "passthrough"}}, // nothing
		{Name: "notify", Readiness: "notify"},                 // its pipe and its socket
	}}}}
	if need, n := fdsAtRest(cfg); need != baseFDs+1+2+0+2 || n != 4 {
		t.Fatalf("fdsAtRest = %d for %d processes, want %d for 4", need, n, baseFDs+5)
	}
	cfg.Supervisor.LogDir = "/var/log/podsup"
	if need, _ := fdsAtRest(cfg); need != baseFDs+2+3+0+3 {
		t.Fatalf("with log_dir: %d, want %d (a file each while it writes)", need, baseFDs+8)
	}
}

func TestFileLimitPlan(t *testing.T) {
	const nrOpen = 1 << 20
	for _, c := range []struct {
		name        string
		need, procs int
		own         int
		cur, hard   uint64
		mayRaise    bool
		raise       bool
		warn        []string // substrings; none means no warning
	}{
		{"fits", 10064, 10000, 64, 19999, 20000, false, false, nil},
		{"fits without raising even as root", 10064, 10000, 64, 19999, 20000, true, false, nil},
		{"root raises the hard limit", 30064, 30000, 64, 19999, 20000, true, true, nil},
		{"too many without CAP_SYS_RESOURCE", 30064, 30000, 64, 19999, 20000, false, false,
			[]string{"needs about 30064 file descriptors with its 30000 processes", "may open only 19999 (RLIMIT_NOFILE 19999:20000)",
				"only about 19935 processes can run at once", "ulimit -Hn", "wait in back-off"}},
		{"too many even for fs.nr_open", 2 << 20, 2 << 20, 64, 19999, 20000, true, false,
			[]string{"may open only 1048575 (RLIMIT_NOFILE 1048575:1048576)", "raise fs.nr_open"}},
		{"already at fs.nr_open", 2 << 20, 2 << 20, 64, nrOpen - 1, nrOpen, true, false, []string{"raise fs.nr_open"}},
		// Issue #25 item 8: 40 sleeps under 64:64 all run (podsup holds
		// about 21 of its own), and the warning said "about 0" would.
		{"fits in podsup's real own fds", 104, 40, 21, 64, 64, false, false, nil},
		{"60 under 64", 124, 60, 21, 64, 64, false, false,
			[]string{"needs about 81 file descriptors with its 60 processes", "about 21 for podsup itself", "only about 43 processes can run at once"}},
		{"own beyond the limit", 124, 60, 80, 64, 64, false, false, []string{"only about 0 processes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raise, warn := fileLimitPlan(c.need, c.procs, c.own, c.cur, c.hard, nrOpen, c.mayRaise)
			if raise != c.raise {
				t.Errorf("raise = %v, want %v", raise, c.raise)
			}
			if (warn == "") != (len(c.warn) == 0) {
				t.Fatalf("warning %q, want one with %q", warn, c.warn)
			}
			for _, w := range c.warn {
				if !strings.Contains(warn, w) {
					t.Errorf("warning %q lacks %q", warn, w)
				}
			}
		})
	}
}

func init() {
	// nofile-start prints the soft RLIMIT_NOFILE Go raised at start and
	// the one startingSoftLimit puts back.
	helpers["nofile-start"] = func([]string) int {
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		fmt.Println(lim.Cur, startingSoftLimit())
		return 0
	}
	// nofile-exec SOFT HARD NEXT ARGS... sets RLIMIT_NOFILE to SOFT:HARD,
	// like `prlimit --nofile=SOFT:HARD`, and execs the test binary as
	// podsup (NEXT "podsup", or podsupLimited) or as helper NEXT, with
	// ARGS.
	helpers["nofile-exec"] = func(args []string) int {
		var soft, hard uint64
		if len(args) < 3 {
			fmt.Fprintln(os.Stderr, "nofile-exec SOFT HARD NEXT ARGS...")
			return 2
		}
		if _, err := fmt.Sscan(args[0]+" "+args[1], &soft, &hard); err != nil {
			fmt.Fprintln(os.Stderr, "nofile-exec:", err)
			return 2
		}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: hard}); err != nil {
			fmt.Fprintln(os.Stderr, "nofile-exec:", err)
			return 2
		}
		if args[2] == podsupLimited {
			// Without CAP_SYS_RESOURCE in its bounding set, root's podsup
			// cannot raise its hard limit: it runs within soft:hard.
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_RESOURCE, 0, 0, 0); err != nil {
				fmt.Fprintln(os.Stderr, "nofile-exec: dropping CAP_SYS_RESOURCE:", err)
				return 2
			}
			args[2] = "podsup"
		}
		exe, _ := os.Executable()
		argv, env := append([]string{exe}, args[3:]...), append(cleanEnv(), helperEnv+"="+args[2])
		if args[2] == "podsup" {
			argv[0], env = "podsup", append(cleanEnv(), asPodsupEnv+"=1")
		}
		err := syscall.Exec(exe, argv, env)
		fmt.Fprintln(os.Stderr, "nofile-exec:", err)
		return 2
	}
}

// podsupLimited as nofile-exec's NEXT runs podsup without
// CAP_SYS_RESOURCE: held to the limit it is given, even as root.
const podsupLimited = "podsup-without-cap-sys-resource"

// nofileCmd runs NEXT ARGS... (see the nofile-exec helper) with
// RLIMIT_NOFILE soft:hard.
func nofileCmd(t testing.TB, soft, hard uint64, next string, args ...string) *proc.Cmd {
	exe := testExe(t)
	return &proc.Cmd{Path: exe, Args: append([]string{exe, fmt.Sprint(soft), fmt.Sprint(hard), next}, args...),
		RunAs: proc.RunAs{Env: append(cleanEnv(), helperEnv+"=nofile-exec")}}
}

func TestStartingSoftLimitIsTheOnePodsupWasStartedWith(t *testing.T) {
	t.Parallel()
	// Go raises the soft limit to hard-1 at start; re-executing podsup with
	// a raised hard limit relies on getting the starting one back.
	s := start(t, nofileCmd(t, 200, 3000, "nofile-start"))
	out := strings.TrimSpace(s.rest(t))
	if e := s.wait(t); e.Code() != 0 || out != "2999 200" {
		t.Fatalf("raised and starting soft limits: %q (%s), want \"2999 200\"", out, e)
	}
}
