// Command massstop measures how long stopping many processes takes: the
// floor (proc.StopFloor, in a process of its own: a bare Go program that
// only signals and reaps them, each in a cgroup of its own), and `podsup
// up` running the same number of `sleep` processes in groups, from
// SIGTERM to podsup's exit. Run it as root from the repository's root, on a quiet machine:
//
//	go build -o /tmp/podsup ./cmd/podsup
//	go run ./bench/massstop -podsup /tmp/podsup -n 10000 -rounds 5
//
// Both stops move by a third from one run to the next on a shared
// machine, the floor as much as podsup, so one round's ratio says little:
// with -rounds, each round measures both (in alternating order, so that
// neither always runs on a machine the other just stirred up), and the
// summary is the median of the per-round ratios, as in bench/sidebyside.
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
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
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
		floor     = flag.Bool("floor", true, "measure the floor too")
		nofile    = flag.Uint64("nofile", 20000, "podsup's hard RLIMIT_NOFILE (its soft limit is 1024)")
		grace     = flag.Duration("grace", 2*time.Second, "each group's termination grace period")
		logMode   = flag.String("log", "capture", `each process's log mode: "capture" (podsup's default: a pipe each, read by podsup) or "passthrough" (podsup's own stdout and stderr)`)
		rounds    = flag.Int("rounds", 1, "rounds, each measuring the floor and podsup (in alternating order); more than one ends with the median of the per-round ratios")
		floorRun  = flag.Bool("floor-run", false, "measure the floor alone in this process and print it (how each round runs the floor: a process of its own, since the floor may not share a process with a reaper)")
	)
	flag.Parse()
	if *floorRun {
		d, err := measureFloor(*n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "massstop: floor:", err)
			os.Exit(1)
		}
		fmt.Printf("%s%d\n", floorResultPrefix, d)
		return
	}
	if *logMode != "capture" && *logMode != "passthrough" {
		fmt.Fprintf(os.Stderr, "massstop: -log %q: want capture or passthrough\n", *logMode)
		os.Exit(2)
	}
	if *rounds < 1 {
		fmt.Fprintf(os.Stderr, "massstop: -rounds %d: want at least 1\n", *rounds)
		os.Exit(2)
	}
	var floors, stops []time.Duration
	for r := 1; r <= *rounds; r++ {
		if *rounds > 1 {
			fmt.Printf("round %d\n", r)
		}
		steps := []func() error{
			func() error {
				if !*floor {
					return nil
				}
				d, err := runFloor(*n)
				if err != nil {
					return fmt.Errorf("floor: %w", err)
				}
				floors = append(floors, d)
				return nil
			},
			func() error {
				if *podsup == "" {
					return nil
				}
				d, err := measurePodsup(*podsup, *n, *groupSize, *nofile, *grace, *logMode)
				if err != nil {
					return fmt.Errorf("podsup: %w", err)
				}
				stops = append(stops, d)
				return nil
			},
		}
		if r%2 == 0 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				fmt.Fprintln(os.Stderr, "massstop:", err)
				os.Exit(1)
			}
		}
	}
	if *rounds > 1 {
		summarize(floors, stops)
	}
}

// summarize prints the medians of several rounds: each side's, and that
// of the per-round ratios of podsup's stop to the floor's.
func summarize(floors, stops []time.Duration) {
	list := func(ds []time.Duration) string {
		s := make([]string, len(ds))
		for i, d := range ds {
			s[i] = d.Round(time.Millisecond).String()
		}
		return strings.Join(s, " / ")
	}
	if len(floors) > 0 {
		fmt.Printf("floor:  median %s (rounds %s)\n", median(floors).Round(time.Millisecond), list(floors))
	}
	if len(stops) > 0 {
		fmt.Printf("podsup: median %s (rounds %s)\n", median(stops).Round(time.Millisecond), list(stops))
	}
	if len(floors) != len(stops) || len(stops) == 0 {
		return
	}
	ratios := make([]float64, len(stops))
	s := make([]string, len(stops))
	for i := range stops {
		ratios[i] = float64(stops[i]) / float64(floors[i])
		s[i] = fmt.Sprintf("%.2f", ratios[i])
	}
	fmt.Printf("podsup / floor: median %.2fx (rounds %s)\n", medianOf(ratios), strings.Join(s, " / "))
}

func median(ds []time.Duration) time.Duration {
	fs := make([]float64, len(ds))
	for i, d := range ds {
		fs[i] = float64(d)
	}
	return time.Duration(medianOf(fs))
}

// medianOf is the median of xs, the mean of the middle two for an even
// count.
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// floorResultPrefix starts the line in which a -floor-run process reports
// its stop, in nanoseconds, to runFloor.
const floorResultPrefix = "floor stop ns: "

// runFloor measures the floor in a process of its own (this program with
// -floor-run), passes on what it prints and returns its stop.
func runFloor(n int) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	p, err := proc.Start(&proc.Cmd{Path: self, Args: []string{self, "-floor-run", "-n", strconv.Itoa(n)}, Stdout: w, Stderr: os.Stderr})
	w.Close() // the child has its own copy; EOF once it exits
	if err != nil {
		return 0, err
	}
	out, err := io.ReadAll(r)
	<-p.Done()
	if err != nil {
		return 0, err
	}
	if e := p.Exit(); e.Code() != 0 {
		return 0, fmt.Errorf("the floor's process ended: %s", e)
	}
	var took time.Duration
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), floorResultPrefix); ok {
			ns, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("the floor's process printed %q: %w", line, err)
			}
			took = time.Duration(ns)
			continue
		}
		fmt.Print(line)
	}
	if took == 0 {
		return 0, fmt.Errorf("the floor's process printed no result")
	}
	return took, nil
}

// measureFloor runs proc.StopFloor and returns its stop: from the first
// SIGTERM to the last cgroup removed.
func measureFloor(n int) (time.Duration, error) {
	dir := ""
	if l, err := cgroups.Detect(); err == nil && l.V2 != nil {
		if own, err := l.V2.OwnDir(); err == nil {
			dir = filepath.Join(own, fmt.Sprintf("massstop-floor-%d", os.Getpid()))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return 0, err
			}
			defer os.Remove(dir)
		}
	}
	// The environment podsup gives the sleeps: its own, which is this
	// program's.
	res, err := proc.StopFloor([]string{"/bin/sleep", "100000"}, os.Environ(), n, dir)
	if err != nil {
		return 0, err
	}
	where := "a cgroup each"
	if dir == "" {
		where = "no cgroups (no cgroup2 hierarchy here)"
	}
	fmt.Printf("floor:  %d sleeps, %s: started in %s; SIGTERM to all %s (signaller CPU %s), all reaped %s, cgroups removed %s\n",
		n, where, res.Started.Round(time.Millisecond), res.Signalled.Round(time.Millisecond),
		res.SignallerCPU.Round(time.Millisecond), res.Reaped.Round(time.Millisecond), res.Removed.Round(time.Millisecond))
	// This process reaped every sleep: their CPU, start to exit, is its
	// children's.
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err == nil {
		fmt.Printf("floor:  the sleeps' own CPU, start to exit: %s\n", rusageCPU(ru).Round(10*time.Millisecond))
	}
	return res.Removed, nil
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

// measurePodsup runs `podsup up` with n sleeps and returns its stop: from
// SIGTERM to its exit.
func measurePodsup(bin string, n, groupSize int, nofile uint64, grace time.Duration, logMode string) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "podsup-massstop-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "massstop.hcl")
	if err := os.WriteFile(cfg, []byte(config(n, groupSize, filepath.Join(dir, "podsup.sock"), grace, logMode)), 0o644); err != nil {
		return 0, err
	}
	// podsup inherits the limit; this process keeps running within it.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Max > nofile {
		lim.Max = nofile
	}
	lim.Cur = min(1024, lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	logf, err := os.Create(filepath.Join(dir, "podsup.log"))
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	exe, err := filepath.Abs(bin)
	if err != nil {
		return 0, err
	}
	started := time.Now()
	p, err := proc.Start(&proc.Cmd{Path: exe, Args: []string{exe, "up", "-f", cfg}, Stdout: logf, Stderr: logf})
	if err != nil {
		return 0, err
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
			return 0, fmt.Errorf("podsup up ended early: %s (log: %s)", p.Exit(), logf.Name())
		case <-interrupted:
			stop()
			return 0, fmt.Errorf("interrupted")
		case <-time.After(time.Second):
		}
		if time.Since(started) > 15*time.Minute {
			stop()
			return 0, fmt.Errorf("only %d of %d processes running after 15 minutes", running, n)
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
		return 0, err
	}
	<-p.Done()
	took := time.Since(t0)
	e := p.Exit()
	last := <-lastCPU
	stopCPU := last - cpuBefore
	time.Sleep(500 * time.Millisecond) // orphans, if any, come to this process's reaper
	fmt.Printf("podsup: SIGTERM to exit %s (%s), podsup CPU in the stop ~%s, processes it left behind: %d\n",
		took.Round(10*time.Millisecond), e, stopCPU.Round(10*time.Millisecond), proc.Stats().Orphans-orphansBefore)
	// podsup's rusage at its exit counts the children it reaped (the
	// sleeps); less its own CPU, last sampled up to 50 ms before its
	// exit, that is the sleeps' CPU, to set beside the floor's.
	fmt.Printf("podsup: the sleeps' own CPU, start to exit: ~%s\n", (rusageCPU(e.Rusage) - last).Round(10*time.Millisecond))
	return took, nil
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

// rusageCPU is the user and system time in ru.
func rusageCPU(ru unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
