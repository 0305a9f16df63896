// Command sidebyside measures podsup beside its peers on this machine, in
// one run, and prints the ratios docs/benchmarks.md quotes:
//
//   - S5: SIGTERM sent from outside to a PID-1 wrapper (the wrapper is PID 1
//     of a new PID namespace) until the child's handler runs, for
//     `podsup run` and for each of tini, dumb-init and catatonit found on
//     PATH; "none" is the child alone as PID 1, the control.
//   - S1: a supervisor's restart reaction: a process that exits at once
//     (/bin/true) until its next instance starts, through `podsup up` at
//     back-off 0 with output capture on (its default), against the Go
//     fork+exec floor (syscall.ForkExec and wait4 in a loop) and the same
//     floor with the spawn attributes every process of podsup's gets
//     ("floor-attrs": its own process group, a pidfd, this environment,
//     placement at fork into a cgroup2 directory of its own); each
//     latency is split at the next child's fork, and each supervisor's
//     CPU per restart is summed over its threads.
//   - S2 and SCALE: N `sleep 100000` under `podsup up` and under
//     s6-svscan: the time until all run, the supervisor's PSS, the time
//     from SIGTERM until all are gone (scale.go); S2 at N = 100 and 1000
//     for the PSS, SCALE at 3000 and 10,000 for the times.
//   - S3 and S4 (idlestop.go): N idle `sleep`s under `podsup up` and
//     s6-svscan, the supervisor's wake-ups and CPU over a window; N
//     children that exit a second after SIGTERM, the time from SIGTERM
//     to the supervisor until all are gone.
//   - SIZE: the binaries' sizes.
//
// Rounds interleave the contestants so that the machine's noise hits all
// of them alike; each figure is the median over rounds of per-round
// medians, and each ratio is the median of the per-round ratios.
//
//	go run ./bench/sidebyside                     # 5 rounds, 30 S5 trials, 3 s S1 windows
//	go run ./bench/sidebyside -rounds 1 -trials 5 -window 1s   # a quick check
//	go run ./bench/sidebyside -s S5 -baseline /tmp/podsup-main  # A/B against another build
//	go run ./bench/sidebyside -s SIZE,S2,SCALE,S3,S4 -baseline /tmp/podsup-main  # issue #28's figures
//
// SCALE at 10,000 needs pids for 20,000 processes beside the machine's
// own (s6 runs an s6-supervise per process: kernel.pid_max, ulimit -u) and
// the hard RLIMIT_NOFILE of 20,000 it gives the supervisors.
//
// Run it as root (PID namespaces, the kernel's process-events connector)
// from the repository's root; it builds podsup from ./cmd/podsup unless
// -podsup names a binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

func init() {
	// The children's modes (child.go) take SIGTERM on the main thread.
	runtime.LockOSThread()
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == childMode {
		os.Exit(runChild(os.Args[2], os.Args[3:]))
	}
	runtime.UnlockOSThread()
	var (
		podsup     = flag.String("podsup", "", "podsup binary (default: built from ./cmd/podsup with CGO_ENABLED=0)")
		rounds     = flag.Int("rounds", 5, "rounds; each runs every contestant once, in rotating order")
		trials     = flag.Int("trials", 30, "S5: signals per wrapper per round")
		window     = flag.Duration("window", 3*time.Second, "S1: measured window per contestant per round (after 1s of warm-up)")
		scenarios  = flag.String("s", "S5,S1", "scenarios to run")
		wrappersFl = flag.String("wrappers", "podsup,tini,dumb-init,catatonit,none", "S5 contestants (those not installed are skipped)")
		baseline   = flag.String("baseline", "", "another podsup binary to measure beside in S5, S1, S2 and SCALE (e.g. a build of main), shown as podsup-base")
		s2N        = flag.String("s2-n", "100,1000", "S2: process counts")
		scaleN     = flag.String("scale-n", "3000,10000", "SCALE: process counts")
		massRounds = flag.Int("mass-rounds", 3, "S2, SCALE, S3 and S4: rounds")
		s3N        = flag.Int("s3-n", 100, "S3: idle processes")
		s3Window   = flag.Duration("s3-window", 20*time.Second, "S3: measured window")
		s3Settle   = flag.Duration("s3-settle", 3*time.Second, "S3: wait after all run, before the window")
		s4N        = flag.Int("s4-n", 100, "S4: processes")
		s4Delay    = flag.Duration("s4-delay", time.Second, "S4: how long each child takes to exit after SIGTERM")
		s4Settle   = flag.Duration("s4-settle", time.Second, "S4: wait after all run, before the SIGTERM")
	)
	flag.Parse()
	if os.Geteuid() != 0 {
		fatalf("run as root: S5 makes PID namespaces, S1 listens to the kernel's process events")
	}
	work, err := os.MkdirTemp("", "sidebyside-")
	if err != nil {
		fatalf("making a work directory: %v", err)
	}
	defer os.RemoveAll(work)
	if *podsup == "" {
		if *podsup, err = buildPodsup(work); err != nil {
			fatalf("building podsup: %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		fatalf("finding this program: %v", err)
	}
	fmt.Printf("sidebyside: %s, %d CPUs, podsup %s, %s\n", runtime.Version(), runtime.NumCPU(), *podsup, time.Now().UTC().Format(time.RFC3339))
	for _, s := range strings.Split(*scenarios, ",") {
		switch strings.TrimSpace(s) {
		case "S5":
			ws := findWrappers(*podsup, strings.Split(*wrappersFl, ","))
			if *baseline != "" {
				ws = append(ws, wrapper{"podsup-base", []string{*baseline, "run", "--"}})
			}
			runS5(self, work, ws, *rounds, *trials)
		case "S1":
			runS1(self, *podsup, *baseline, work, *rounds, *window)
		case "S2":
			runMass("S2", *podsup, *baseline, work, counts(*s2N), *massRounds)
		case "SCALE":
			runMass("SCALE", *podsup, *baseline, work, counts(*scaleN), *massRounds)
		case "S3":
			runIdle(*podsup, *baseline, work, *s3N, *s3Window, *s3Settle, *massRounds)
		case "S4":
			runStop(self, *podsup, *baseline, work, *s4N, *s4Delay, *s4Settle, *massRounds)
		case "SIZE":
			runSize(*podsup, *baseline)
		default:
			fatalf("unknown scenario %q (S5, S1, S2, SCALE, S3, S4, SIZE)", s)
		}
	}
}

// buildPodsup builds the release way: static, stripped.
func buildPodsup(dir string) (string, error) {
	out := filepath.Join(dir, "podsup")
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building podsup needs the go command on PATH: %w", err)
	}
	env := append(os.Environ(), "CGO_ENABLED=0")
	p, err := proc.Start(&proc.Cmd{Path: goTool, Args: []string{"go", "build", "-ldflags", "-s -w", "-o", out, "./cmd/podsup"}, RunAs: proc.RunAs{Env: env}, Stdout: os.Stderr, Stderr: os.Stderr})
	if err != nil {
		return "", err
	}
	e, err := p.Wait(context.Background())
	if err != nil {
		return "", err
	}
	if e.Code() != 0 {
		return "", fmt.Errorf("go build: %s (run from the repository's root)", e)
	}
	return out, nil
}

func counts(list string) []int {
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fatalf("bad process count %q", f)
		}
		ns = append(ns, n)
	}
	return ns
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sidebyside: "+format+"\n", args...)
	os.Exit(1)
}
