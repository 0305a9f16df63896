package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// The mass scenarios run N `sleep 100000` under a supervisor: `podsup up`
// (groups of 100, as bench/massstop) and s6-svscan (one service directory
// per process, each with a run script `exec sleep 100000`), and measure
//
//   - start: from the supervisor's start until all N sleeps run (exec'd
//     and not exited, from the kernel's process events);
//   - PSS: the supervisor's, some seconds after that (podsup; s6-svscan
//     and every s6-supervise), from smaps_rollup;
//   - stop: from SIGTERM to the supervisor until it and everything it
//     started are gone.
//
// S2 is that at N = 100 and 1000, for the PSS; SCALE at N = 3000 and
// 10,000, for the start and stop times.

const massPSSDelay = 3 * time.Second

type massResult struct {
	start, stop time.Duration
	pssKB       int64
	cpu         time.Duration // the supervisor's CPU until all ran (podsup alone)
}

// massRun is what a mass round runs: N processes of one command under a
// supervisor, and what it does while they all run.
type massRun struct {
	n    int
	argv []string // each process's command (argv[0] on PATH or absolute)
	// comm is what the kernel calls the command once it runs
	// (/proc/PID/comm): a process of the tree that has it is running.
	comm string
	// grace is podsup's termination_grace_period for each group.
	grace string
	// hold runs while all N run, before the supervisor's SIGTERM.
	hold func(tr *tree, res *massResult) error
}

// sleepRun is the mass scenarios' round: n `sleep 100000`, the
// supervisor's PSS read massPSSDelay after all run.
func sleepRun(n int) massRun {
	return massRun{n: n, argv: []string{"sleep", "100000"}, comm: "sleep", grace: "2s",
		hold: func(tr *tree, res *massResult) error {
			time.Sleep(massPSSDelay)
			res.pssKB = tr.pss()
			return nil
		}}
}

// runMass runs each contestant at each N, rounds times, rotating the
// order, and prints per-round figures and medians.
func runMass(title, podsup, baseline, work string, ns []int, rounds int) {
	contestants, s6 := massContestants(title, baseline)
	fmt.Printf("\n%s: N sleeps: start until all run, supervisor PSS %s later, stop until all gone (%d rounds)\n", title, massPSSDelay, rounds)
	for _, n := range ns {
		all := map[string][]massResult{}
		for r := 0; r < rounds; r++ {
			for _, who := range rotate(contestants, r) {
				res, err := massOf(who, podsup, baseline, s6, work, sleepRun(n))
				if err != nil {
					fmt.Printf("  N=%d round %d %-11s %v\n", n, r+1, who, err)
					continue
				}
				all[who] = append(all[who], res)
				fmt.Printf("  N=%d round %d %-11s start %7.2f s  PSS %7.1f MB  stop %6.2f s  (load %s)\n",
					n, r+1, who, res.start.Seconds(), float64(res.pssKB)/1024, res.stop.Seconds(), loadAvg())
			}
		}
		for _, who := range contestants {
			var st, sp, pss []float64
			for _, x := range all[who] {
				st = append(st, x.start.Seconds())
				sp = append(sp, x.stop.Seconds())
				pss = append(pss, float64(x.pssKB)/1024)
			}
			fmt.Printf("  N=%d %-11s median start %.2f s (%s), PSS %.1f MB (%s), stop %.2f s (%s)\n",
				n, who, median(st), fmtList2(st), median(pss), fmtList1(pss), median(sp), fmtList2(sp))
		}
	}
}

// massPodsup runs r under `podsup up`, in groups of 100 as
// bench/massstop does.
func massPodsup(bin, work string, r massRun) (massResult, error) {
	dir, err := os.MkdirTemp(work, "mass-")
	if err != nil {
		return massResult{}, err
	}
	defer os.RemoveAll(dir)
	quoted := make([]string, len(r.argv))
	for i, a := range r.argv {
		quoted[i] = strconv.Quote(a)
	}
	command := "[" + strings.Join(quoted, ", ") + "]"
	var b strings.Builder
	fmt.Fprintf(&b, "supervisor {\n  socket        = %q\n  minimum_grace = \"100ms\"\n}\n", filepath.Join(dir, "podsup.sock"))
	for g := 0; g*100 < r.n; g++ {
		fmt.Fprintf(&b, "group \"g%d\" {\n  termination_grace_period = %q\n", g, r.grace)
		for i := g * 100; i < min((g+1)*100, r.n); i++ {
			fmt.Fprintf(&b, "  process \"p%d\" {\n    command = %s\n  }\n", i, command)
		}
		b.WriteString("}\n")
	}
	cfg := filepath.Join(dir, "podsup.hcl")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return massResult{}, err
	}
	return measureMass(r, func() (*proc.Process, error) {
		return proc.Start(&proc.Cmd{Path: bin, Args: []string{bin, "up", "-f", cfg}})
	})
}

// massS6 runs r under s6-svscan: a service directory per process, each
// with a run script that execs the command.
func massS6(svscan, work string, r massRun) (massResult, error) {
	dir, err := os.MkdirTemp(work, "mass-s6-")
	if err != nil {
		return massResult{}, err
	}
	defer os.RemoveAll(dir)
	script := "#!/bin/sh\nexec"
	for _, a := range r.argv {
		script += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	script += "\n"
	for i := 0; i < r.n; i++ {
		svc := filepath.Join(dir, fmt.Sprintf("p%d", i))
		if err := os.Mkdir(svc, 0o755); err != nil {
			return massResult{}, err
		}
		if err := os.WriteFile(filepath.Join(svc, "run"), []byte(script), 0o755); err != nil {
			return massResult{}, err
		}
	}
	return measureMass(r, func() (*proc.Process, error) {
		return proc.Start(&proc.Cmd{Path: svscan, Args: []string{"s6-svscan", "-c", strconv.Itoa(r.n + 10), dir}})
	})
}

// measureMass starts a supervisor under RLIMIT_NOFILE 1024:20000 (the
// limit of the 10,000-process acceptance test), follows its descendants
// through the kernel's process events and takes the three figures.
func measureMass(r massRun, startSupervisor func() (*proc.Process, error)) (res massResult, err error) {
	n := r.n
	var lim, old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		return res, err
	}
	lim.Max = max(old.Max, 20000)
	lim.Cur = 1024
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return res, err
	}
	l, err := listenProcEvents()
	if err != nil {
		return res, fmt.Errorf("process events connector: %w", err)
	}
	defer l.close()
	tr := newTree(r.comm)
	go l.each(tr.event)
	t0 := time.Now()
	sup, err := startSupervisor()
	_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	defer func() {
		if tr.rescans > 0 {
			fmt.Printf("  (events were lost: the tree was read from /proc %d times)\n", tr.rescans)
		}
	}()
	if err != nil {
		return res, err
	}
	tr.add(int32(sup.Pid()))
	defer tr.killAll() // whatever is left after a failure, by pid
	// Interrupted, the harness leaves nothing of the round behind.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupted)
	stopWatching := make(chan struct{})
	defer close(stopWatching)
	go func() {
		select {
		case <-interrupted:
			tr.killAll()
			fatalf("interrupted")
		case <-stopWatching:
		}
	}()
	// A busy machine can overflow the events socket: then the tree is
	// read again from /proc.
	tr.lost = &l.lost
	if !tr.waitFor(func() bool { return tr.running() >= n }, 10*time.Minute, sup) {
		_ = sup.Signal(syscall.SIGTERM)
		return res, fmt.Errorf("%d of %d running after 10 minutes or the supervisor ended", tr.running(), n)
	}
	res.start = time.Since(t0)
	res.cpu = procCPU(sup.Pid())
	if err := r.hold(tr, &res); err != nil {
		_ = sup.Signal(syscall.SIGTERM)
		return res, err
	}
	t1 := time.Now()
	if err := sup.Signal(syscall.SIGTERM); err != nil {
		return res, err
	}
	if !tr.waitFor(func() bool { return tr.size() == 0 }, 5*time.Minute, nil) {
		return res, fmt.Errorf("%d processes left 5 minutes after SIGTERM", tr.size())
	}
	res.stop = time.Since(t1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = sup.Wait(ctx) // gone already: its exit is reaped here
	return res, nil
}

// tree is a supervisor and its descendants, from the process events.
type tree struct {
	comm  string // what the supervised command is called once it runs
	mu    sync.Mutex
	procs map[int32]bool // pid → runs the supervised command
	nrun  int
	// early are forks by processes not (yet) in the tree: the
	// supervisor's first forks may be seen before add has its pid.
	early map[int32][]int32
	root  int32
	// lost is set when events were lost: the next wait rescans /proc.
	lost    *atomic.Bool
	rescans int
}

func newTree(comm string) *tree {
	return &tree{comm: comm, procs: map[int32]bool{}, early: map[int32][]int32{}}
}

func (t *tree) add(pid int32) {
	t.mu.Lock()
	t.root = pid
	for queue := []int32{pid}; len(queue) > 0; queue = queue[1:] {
		t.procs[queue[0]] = false
		queue = append(queue, t.early[queue[0]]...)
	}
	t.early = nil
	t.mu.Unlock()
}

func (t *tree) event(e procEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.what {
	case evFork:
		if e.pid != e.tgid {
			break // a thread
		}
		if _, ok := t.procs[e.parentTgid]; ok {
			t.procs[e.pid] = false
		} else if t.early != nil {
			t.early[e.parentTgid] = append(t.early[e.parentTgid], e.pid)
		}
	case evExec:
		if isSleep, ok := t.procs[e.pid]; ok && !isSleep {
			// Read now: the supervisor's children exec once (podsup) or
			// twice (s6: the run script, then the command).
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", e.pid)); strings.TrimSpace(string(b)) == t.comm {
				t.procs[e.pid] = true
				t.nrun++
			}
		}
	case evExit:
		if isSleep, ok := t.procs[e.pid]; ok && e.pid == e.tgid {
			delete(t.procs, e.pid)
			if isSleep {
				t.nrun--
			}
		}
	}
}

func (t *tree) running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nrun
}

func (t *tree) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.procs)
}

// supervisors returns the processes of the tree that do not run the
// supervised command: the supervisor's own.
func (t *tree) supervisors() []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var pids []int32
	for pid, runs := range t.procs {
		if !runs {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pss sums the PSS of the supervisor's own processes.
func (t *tree) pss() int64 {
	var sum int64
	for _, pid := range t.supervisors() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				sum += kb
			}
		}
	}
	return sum
}

// waitFor polls cond every 20 ms until it holds, the timeout passes, or
// sup (if not nil) ends.
func (t *tree) waitFor(cond func() bool, timeout time.Duration, sup *proc.Process) bool {
	deadline := time.Now().Add(timeout)
	last, lastChange := -1, time.Now()
	for {
		if t.lost != nil && t.lost.CompareAndSwap(true, false) {
			t.rescan()
		}
		// No change for seconds on a loaded machine: make sure no
		// event went unseen.
		if now := t.size() + t.running(); now != last {
			last, lastChange = now, time.Now()
		} else if time.Since(lastChange) > 3*time.Second {
			t.rescan()
			lastChange = time.Now()
		}
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if sup != nil {
			select {
			case <-sup.Done():
				return false
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rescan rebuilds the tree from /proc: the root and its descendants, and
// which of them run sleep.
func (t *tree) rescan() {
	ents, _ := os.ReadDir("/proc")
	kids := map[int32][]int32{}
	sleeps := map[int32]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		kids[int32(ppid)] = append(kids[int32(ppid)], int32(pid))
		sleeps[int32(pid)] = s[open+1:end] == t.comm && f[0] != "Z"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rescans++
	procs := map[int32]bool{}
	nrun := 0
	if _, alive := sleeps[t.root]; alive {
		for queue := []int32{t.root}; len(queue) > 0; queue = queue[1:] {
			p := queue[0]
			procs[p] = sleeps[p]
			if sleeps[p] {
				nrun++
			}
			queue = append(queue, kids[p]...)
		}
	}
	t.procs, t.nrun = procs, nrun
}

// killAll SIGKILLs what is left of the tree, pid by pid (never a pid <= 1).
func (t *tree) killAll() {
	t.mu.Lock()
	var pids []int32
	for pid := range t.procs {
		if pid > 1 {
			pids = append(pids, pid)
		}
	}
	t.mu.Unlock()
	for _, pid := range pids {
		_ = unix.Kill(int(pid), unix.SIGKILL)
	}
	if len(pids) > 0 {
		t.waitFor(func() bool { return t.size() == 0 }, 30*time.Second, nil)
	}
}

func procCPU(pid int) time.Duration {
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

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// runSize prints the size of each binary (stat, as docs/benchmarks.md's
// binary-size table counts it).
func runSize(podsup, baseline string) {
	fmt.Printf("\nSIZE: binary sizes (bytes)\n")
	show := func(name, path string) {
		if st, err := os.Stat(path); err == nil {
			fmt.Printf("  %-12s %12d  %s\n", name, st.Size(), path)
		}
	}
	show("podsup", podsup)
	if baseline != "" {
		show("podsup-base", baseline)
	}
	for _, b := range []string{"s6-svscan", "s6-supervise", "tini", "dumb-init", "catatonit"} {
		if p, err := exec.LookPath(b); err == nil {
			show(b, p)
		}
	}
}

func fmtList2(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " / ")
}

func fmtList1(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, " / ")
}
