// Command massstop measures how long stopping many processes takes: first
// the floor (proc.StopFloor: a bare Go program that only signals and
// reaps them, each in a cgroup of its own), then `podsup up` running the
// same number of `sleep` processes in groups, from SIGTERM to podsup's
// exit. Run it as root from the repository's root, on a quiet machine:
//
//	go build -o /tmp/podsup ./cmd/podsup
//	go run ./bench/massstop -podsup /tmp/podsup -n 10000
//
// podsup runs under RLIMIT_NOFILE 1024:20000 (-nofile), the limit the
// 10,000-process acceptance test names. Both figures come from the same
// run, so they can be set beside each other; the difference is what podsup
// adds (events, status, the post-exit tree check, cgroup teardown, and the
// capture of each process's output: -log passthrough leaves it out).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
)

func main() {
	var (
		n         = flag.Int("n", 10000, "processes")
		groupSize = flag.Int("group-size", 100, "processes per group")
		podsup    = flag.String("podsup", "", "the podsup binary (none: the floor alone)")
		floor     = flag.Bool("floor", true, "measure the floor first")
		nofile    = flag.Uint64("nofile", 20000, "podsup's hard RLIMIT_NOFILE (its soft limit is 1024)")
		grace     = flag.Duration("grace", 2*time.Second, "each group's termination grace period")
		logMode   = flag.String("log", "capture", `each process's log mode: "capture" (podsup's default: a pipe each, read by podsup) or "passthrough" (podsup's own stdout and stderr)`)
	)
	flag.Parse()
	if *floor {
		if err := measureFloor(*n); err != nil {
			fmt.Fprintln(os.Stderr, "massstop: floor:", err)
			os.Exit(1)
		}
	}
	if *podsup != "" {
		if *logMode != "capture" && *logMode != "passthrough" {
			fmt.Fprintf(os.Stderr, "massstop: -log %q: want capture or passthrough\n", *logMode)
			os.Exit(2)
		}
		if err := measurePodsup(*podsup, *n, *groupSize, *nofile, *grace, *logMode); err != nil {
			fmt.Fprintln(os.Stderr, "massstop: podsup:", err)
			os.Exit(1)
		}
	}
}

func measureFloor(n int) error {
	dir := ""
	if l, err := cgroups.Detect(); err == nil && l.V2 != nil {
		if own, err := l.V2.OwnDir(); err == nil {
			dir = filepath.Join(own, fmt.Sprintf("massstop-floor-%d", os.Getpid()))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			defer os.Remove(dir)
		}
	}
	res, err := proc.StopFloor([]string{"/bin/sleep", "100000"}, n, dir)
	if err != nil {
		return err
	}
	where := "a cgroup each"
	if dir == "" {
		where = "no cgroups (no cgroup2 hierarchy here)"
	}
	fmt.Printf("floor:  %d sleeps, %s: started in %s; SIGTERM to all %s (signaller CPU %s), all reaped %s, cgroups removed %s\n",
		n, where, res.Started.Round(time.Millisecond), res.Signalled.Round(time.Millisecond),
		res.SignallerCPU.Round(time.Millisecond), res.Reaped.Round(time.Millisecond), res.Removed.Round(time.Millisecond))
	return nil
}

func config(n, groupSize int, socket string, grace time.Duration, logMode string) string {
	log := ""
	if logMode != "capture" {
		log = fmt.Sprintf("    log {\n      mode = %q\n    }\n", logMode)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "supervisor {\n  socket        = %q\n  minimum_grace = \"100ms\"\n}\n", socket)
	for g := 0; g*groupSize < n; g++ {
		fmt.Fprintf(&b, "group \"g%d\" {\n  termination_grace_period = %q\n", g, grace.String())
		for i := g * groupSize; i < min((g+1)*groupSize, n); i++ {
			fmt.Fprintf(&b, "  process \"p%d\" {\n    command = [\"sleep\", \"100000\"]\n%s  }\n", i, log)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func measurePodsup(bin string, n, groupSize int, nofile uint64, grace time.Duration, logMode string) error {
	dir, err := os.MkdirTemp("", "podsup-massstop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "massstop.hcl")
	if err := os.WriteFile(cfg, []byte(config(n, groupSize, filepath.Join(dir, "podsup.sock"), grace, logMode)), 0o644); err != nil {
		return err
	}
	// podsup inherits the limit; this process keeps running within it.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Max > nofile {
		lim.Max = nofile
	}
	lim.Cur = min(1024, lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "podsup.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	exe, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	started := time.Now()
	p, err := proc.Start(&proc.Cmd{Path: exe, Args: []string{exe, "up", "-f", cfg}, Stdout: logf, Stderr: logf})
	if err != nil {
		return err
	}
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupted)
	stop := func() {
		_ = p.Signal(syscall.SIGTERM)
		<-p.Done()
	}
	for running := 0; running < n; running = children(p.Pid()) {
		select {
		case <-p.Done():
			return fmt.Errorf("podsup up ended early: %s (log: %s)", p.Exit(), logf.Name())
		case <-interrupted:
			stop()
			return fmt.Errorf("interrupted")
		case <-time.After(time.Second):
		}
		if time.Since(started) > 15*time.Minute {
			stop()
			return fmt.Errorf("only %d of %d processes running after 15 minutes", running, n)
		}
	}
	fmt.Printf("podsup: %d sleeps in %d groups running after %s, podsup at %d fds\n",
		n, (n+groupSize-1)/groupSize, time.Since(started).Round(time.Second), fds(p.Pid()))
	time.Sleep(2 * time.Second)
	cpuBefore := cpu(p.Pid())
	orphansBefore := proc.Stats().Orphans
	// podsup's own CPU, sampled until it exits: the rusage of its exit
	// also counts every process it reaped.
	lastCPU := make(chan time.Duration, 1)
	go func() {
		last := cpuBefore
		for !isDone(p) {
			if c := cpu(p.Pid()); c > 0 {
				last = c
			}
			time.Sleep(50 * time.Millisecond)
		}
		lastCPU <- last
	}()
	t0 := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	<-p.Done()
	took := time.Since(t0)
	e := p.Exit()
	stopCPU := <-lastCPU - cpuBefore
	time.Sleep(500 * time.Millisecond) // orphans, if any, come to this process's reaper
	fmt.Printf("podsup: SIGTERM to exit %s (%s), podsup CPU in the stop ~%s, processes it left behind: %d\n",
		took.Round(10*time.Millisecond), e, stopCPU.Round(10*time.Millisecond), proc.Stats().Orphans-orphansBefore)
	return nil
}

func isDone(p *proc.Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// children counts pid's children (zombies too).
func children(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	count := 0
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		count += len(strings.Fields(string(b)))
	}
	return count
}

func fds(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// cpu is pid's user+system time so far, from /proc/PID/stat.
func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
