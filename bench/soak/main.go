// Command soak runs `podsup up` under a crash-loop and probe load and checks
// that podsup does not drift: after the run its RSS, open fds and goroutines
// are within a tolerance of their values after warm-up, no zombie lingers,
// `podsup status` answered every time within a bound, and a shutdown leaves
// no process behind. It prints the figures and exits 1 when a check fails.
//
//	go build -o podsup ./cmd/podsup
//	go run ./bench/soak -podsup ./podsup -duration 60s        # CI's short form
//	go run ./bench/soak -podsup ./podsup -duration 30m        # the long form
//
// It needs root only where the machine's cgroups do (podsup up gives every
// process a cgroup where it can).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/proc"
)

type options struct {
	podsup      string
	duration    time.Duration
	warmup      time.Duration
	crashers    int
	probed      int
	groupSize   int
	statusEvery time.Duration
	maxStatus   time.Duration
	tolerance   float64
}

func main() {
	var o options
	flag.StringVar(&o.podsup, "podsup", "./podsup", "the podsup binary to soak")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long the load runs after warm-up")
	flag.DurationVar(&o.warmup, "warmup", 15*time.Second, "how long before the baseline is taken")
	flag.IntVar(&o.crashers, "crashers", 300, "processes that exit at once, restarted with back-off 0")
	flag.IntVar(&o.probed, "probed", 100, "long-running processes with an exec liveness probe every second")
	flag.IntVar(&o.groupSize, "group-size", 25, "processes per group")
	flag.DurationVar(&o.statusEvery, "status-every", 250*time.Millisecond, "how often podsup status is asked")
	flag.DurationVar(&o.maxStatus, "max-status", 200*time.Millisecond, "the longest a status answer may take")
	flag.Float64Var(&o.tolerance, "tolerance", 0.10, "how far RSS, fds and goroutines may grow past warm-up (0.10 = 10%)")
	flag.Parse()
	failures, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if len(failures) > 0 {
		fmt.Println("FAIL:")
		for _, f := range failures {
			fmt.Println("  " + f)
		}
		os.Exit(1)
	}
	fmt.Println("PASS")
}

// config writes the soak's configuration: crash-looping groups and probed
// groups, every process marked with id in its environment so that a
// leftover can be recognised after podsup is gone.
func config(o options, socket, id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "supervisor {\n  socket = %q\n  minimum_grace = \"100ms\"\n}\n", socket)
	b.WriteString("backoff {\n  initial = \"0s\"\n  max = \"1s\"\n}\n")
	writeGroups := func(kind string, n int, body func(name string) string) {
		for g := 0; g*o.groupSize < n; g++ {
			fmt.Fprintf(&b, "group \"%s-%d\" {\n  termination_grace_period = \"2s\"\n", kind, g)
			for i := g * o.groupSize; i < min(n, (g+1)*o.groupSize); i++ {
				b.WriteString(body(fmt.Sprintf("%s-%d", kind, i)))
			}
			b.WriteString("}\n")
		}
	}
	env := fmt.Sprintf("env = { PODSUP_SOAK = %q }", id)
	writeGroups("crash", o.crashers, func(name string) string {
		return fmt.Sprintf("  process %q {\n    command = [\"false\"]\n    %s\n  }\n", name, env)
	})
	writeGroups("probed", o.probed, func(name string) string {
		return fmt.Sprintf("  process %q {\n    command = [\"sleep\", \"1000000\"]\n    %s\n"+
			"    liveness_probe {\n      exec {\n        command = [\"true\"]\n      }\n      period = \"1s\"\n    }\n  }\n", name, env)
	})
	return b.String()
}

// sample is podsup's own resource use at one moment.
type sample struct {
	rss        int64
	fds        int
	goroutines int
}

func run(o options) (failures []string, err error) {
	dir, err := os.MkdirTemp("", "podsup-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	idBytes := make([]byte, 8)
	_, _ = rand.Read(idBytes)
	id := hex.EncodeToString(idBytes)
	socket := filepath.Join(dir, "podsup.sock")
	cfg := filepath.Join(dir, "soak.hcl")
	if err := os.WriteFile(cfg, []byte(config(o, socket, id)), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "podsup.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	exe, err := filepath.Abs(o.podsup)
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(&proc.Cmd{Path: exe, Args: []string{exe, "up", "-f", cfg}, Stdout: logf, Stderr: logf})
	if err != nil {
		return nil, fmt.Errorf("starting podsup: %w", err)
	}
	defer func() {
		if !isDone(p) { // an error path: do not leave it running
			_ = p.Signal(syscall.SIGKILL)
			<-p.Done()
		}
		if len(failures) > 0 || err != nil {
			fmt.Println("--- podsup's log (last 40 lines) ---")
			fmt.Println(tail(logPath, 40))
		}
	}()
	stopOnInterrupt(p, dir)
	c := api.NewClient(socket)
	if !waitFor(30*time.Second, func() bool { _, err := c.Version(context.Background()); return err == nil }) {
		return nil, fmt.Errorf("podsup up never answered on %s", socket)
	}
	fmt.Printf("soak: %d crash-looping processes (back-off 0), %d with an exec liveness probe every 1s, warm-up %s, run %s\n",
		o.crashers, o.probed, o.warmup, o.duration)

	lat := &latencies{}
	var stuckZombies []int
	poll := func(until time.Time) {
		for time.Now().Before(until) {
			lat.ask(c)
			time.Sleep(o.statusEvery)
		}
	}
	poll(time.Now().Add(o.warmup))
	warm, err := resting(c, 10, lat)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	restartsBefore := restarts(c)
	poll(start.Add(o.duration))
	end, err := resting(c, 10, lat)
	if err != nil {
		return nil, err
	}
	ranFor := time.Since(start)
	restartsDuring := restarts(c) - restartsBefore
	stuckZombies = lingeringZombies(p.Pid())

	fmt.Printf("%-12s %12s %12s %8s\n", "figure", "after warm-up", "at the end", "change")
	row := func(name string, a, b float64) {
		fmt.Printf("%-12s %12.0f %12.0f %7.1f%%\n", name, a, b, 100*(b-a)/a)
		if b > a*(1+o.tolerance) {
			failures = append(failures, fmt.Sprintf("%s grew from %.0f to %.0f (more than %.0f%%)", name, a, b, 100*o.tolerance))
		}
	}
	row("rss (KiB)", float64(warm.rss)/1024, float64(end.rss)/1024)
	row("fds-running", float64(warm.fds), float64(end.fds)) // open fds less one per running process (resting)
	row("goroutines", float64(warm.goroutines), float64(end.goroutines))
	fmt.Printf("restarts during the run: %d (%.0f/s)\n", restartsDuring, float64(restartsDuring)/ranFor.Seconds())
	fmt.Printf("status answers: %d, median %s, p99 %s, max %s, errors %d\n",
		lat.n(), lat.quantile(0.5), lat.quantile(0.99), lat.max(), lat.errors)
	fmt.Printf("lingering zombies: %d\n", len(stuckZombies))
	if lat.errors > 0 {
		failures = append(failures, fmt.Sprintf("podsup status failed %d times (last: %v)", lat.errors, lat.lastErr))
	}
	if m := lat.max(); m > o.maxStatus {
		failures = append(failures, fmt.Sprintf("podsup status took %s at worst (bound %s; %d of %d answers over it)", m, o.maxStatus, lat.over(o.maxStatus), lat.n()))
	}
	if len(stuckZombies) > 0 {
		failures = append(failures, fmt.Sprintf("zombies not reaped for over a second: %v", stuckZombies))
	}
	if restartsDuring == 0 && o.crashers > 0 {
		failures = append(failures, "no restart happened during the run: the load did not run")
	}

	t0 := time.Now()
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		failures = append(failures, "podsup did not exit within 60s of SIGTERM")
		_ = p.Signal(syscall.SIGKILL)
		<-p.Done()
	}
	fmt.Printf("shutdown: exit %s in %s\n", p.Exit(), time.Since(t0).Round(time.Millisecond))
	if code := p.Exit().Code(); code != 0 {
		failures = append(failures, fmt.Sprintf("podsup exited %d after SIGTERM, want 0", code))
	}
	if left := marked(id); len(left) > 0 {
		failures = append(failures, fmt.Sprintf("processes of the soak outlived podsup: %v", left))
		for _, pid := range left {
			if pid > 0 { // never a pid <= 0 to kill()
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return failures, nil
}

// resting takes n samples half a second apart and returns each figure's
// minimum: probes and restarts in flight hold fds and goroutines for a
// moment, and what must not grow is the level podsup comes back to.
// Status latencies are recorded meanwhile.
//
// Open fds are counted less one per running process: each holds the read
// end of its output pipe, and how many of the 300 crash-loopers are alive
// at a sample depends on how fast the machine runs /bin/false (a loaded
// CI machine kept 30 more alive at the end than after warm-up). What must
// not grow is what podsup holds beyond them.
func resting(c *api.Client, n int, lat *latencies) (sample, error) {
	var rss []int64
	var fds, gs []int
	for i := 0; i < n; i++ {
		s, err := c.Self(context.Background())
		if err != nil {
			return sample{}, fmt.Errorf("asking podsup for its own figures: %w", err)
		}
		rss, fds, gs = append(rss, s.RSSBytes), append(fds, s.OpenFDs-running(c)), append(gs, s.Goroutines)
		lat.ask(c)
		time.Sleep(500 * time.Millisecond)
	}
	return sample{rss: slices.Min(rss), fds: slices.Min(fds), goroutines: slices.Min(gs)}, nil
}

// running counts the processes podsup reports running.
func running(c *api.Client) int {
	return sumProcesses(c, func(p api.ProcessStatus) int {
		if p.State == "running" {
			return 1
		}
		return 0
	})
}

func restarts(c *api.Client) int {
	return sumProcesses(c, func(p api.ProcessStatus) int { return p.RestartCount })
}

// sumProcesses adds f over every process of one status answer (0 when
// podsup does not answer).
func sumProcesses(c *api.Client, f func(api.ProcessStatus) int) int {
	st, err := c.Status(context.Background(), "", "")
	if err != nil {
		return 0
	}
	n := 0
	for _, g := range st.Groups {
		for _, p := range g.Processes {
			n += f(p)
		}
	}
	return n
}

// latencies records how long each status request took.
type latencies struct {
	d       []time.Duration
	errors  int
	lastErr error
}

func (l *latencies) ask(c *api.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t := time.Now()
	_, err := c.Status(ctx, "", "")
	if err != nil {
		l.errors++
		l.lastErr = err
		return
	}
	l.d = append(l.d, time.Since(t))
}

func (l *latencies) n() int { return len(l.d) }

func (l *latencies) sorted() []time.Duration {
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s
}

func (l *latencies) quantile(q float64) time.Duration {
	s := l.sorted()
	if len(s) == 0 {
		return 0
	}
	return s[int(q*float64(len(s)-1))].Round(10 * time.Microsecond)
}

func (l *latencies) max() time.Duration { return l.quantile(1) }

func (l *latencies) over(bound time.Duration) int {
	n := 0
	for _, d := range l.d {
		if d > bound {
			n++
		}
	}
	return n
}

// lingeringZombies lists ppid's zombie children that are still zombies a
// second later: an exit the reaper missed, not one it is about to reap.
func lingeringZombies(ppid int) []int {
	first := zombies(ppid)
	time.Sleep(time.Second)
	var out []int
	for _, pid := range zombies(ppid) {
		if slices.Contains(first, pid) {
			out = append(out, pid)
		}
	}
	return out
}

func zombies(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; cut at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 2 && f[0] == "Z" && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// marked lists live processes whose environment carries PODSUP_SOAK=id.
func marked(id string) []int {
	needle := []byte("PODSUP_SOAK=" + id + "\x00")
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, needle) {
			out = append(out, pid)
		}
	}
	return out
}

// stopOnInterrupt makes ^C (or a SIGTERM to the soak) stop the podsup it
// started, gracefully, before the soak exits: an interrupted soak must not
// leave a podsup and its 400 processes behind.
func stopOnInterrupt(p *proc.Process, dir string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "soak: %s: stopping podsup\n", s)
		_ = p.Signal(syscall.SIGTERM)
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			_ = p.Signal(syscall.SIGKILL)
			<-p.Done()
		}
		_ = os.RemoveAll(dir)
		os.Exit(130)
	}()
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

func isDone(p *proc.Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
