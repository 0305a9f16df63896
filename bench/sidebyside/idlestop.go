package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// S3 and S4 run N processes under `podsup up` and under s6-svscan, the way
// the mass scenarios do (scale.go), and measure what a supervisor costs
// when nothing happens and how fast it stops:
//
//   - S3, idle: N `sleep 100000`; once all run and a settling time has
//     passed, the CPU time and the time slices (each one a wake-up) of the
//     supervisor's own processes and threads over a window, from
//     /proc/PID/task/*/schedstat: podsup's threads; s6-svscan and every
//     s6-supervise.
//   - S4, stop: N children that, on SIGTERM, note the time, wait a delay
//     (1 s, as the out-of-tree harness's `bk term`) and exit 0: from
//     SIGTERM to the supervisor until it and all of them are gone, with
//     the spread of their SIGTERMs and how many exited on their own
//     (rather than by a SIGKILL at the end of a grace period).

// idleResult is one S3 round of one supervisor.
type idleResult struct {
	cpu      time.Duration
	slices   int64
	seconds  float64
	supProcs int
}

func runIdle(podsup, baseline, work string, n int, window, settle time.Duration, rounds int) {
	contestants, s6 := massContestants("S3", baseline)
	fmt.Printf("\nS3: %d idle sleeps: the supervisor's CPU and wake-ups (time slices) over %s, %s after all run (%d rounds)\n", n, window, settle, rounds)
	all := map[string][]idleResult{}
	for r := 0; r < rounds; r++ {
		for _, who := range rotate(contestants, r) {
			var ir idleResult
			run := massRun{n: n, argv: []string{"sleep", "100000"}, comm: "sleep", grace: "2s",
				hold: func(tr *tree, _ *massResult) error {
					time.Sleep(settle)
					pids := tr.supervisors()
					cpu0, sl0 := schedstat(pids)
					t0 := time.Now()
					time.Sleep(window)
					cpu1, sl1 := schedstat(pids)
					ir = idleResult{cpu: cpu1 - cpu0, slices: sl1 - sl0, seconds: time.Since(t0).Seconds(), supProcs: len(pids)}
					return nil
				}}
			if _, err := massOf(who, podsup, baseline, s6, work, run); err != nil {
				fmt.Printf("  round %d %-11s %v\n", r+1, who, err)
				continue
			}
			all[who] = append(all[who], ir)
			fmt.Printf("  round %d %-11s CPU %7.2f ms  %5d wake-ups (%.2f/s)  %d supervisor processes  (load %s)\n",
				r+1, who, float64(ir.cpu.Microseconds())/1000, ir.slices, float64(ir.slices)/ir.seconds, ir.supProcs, loadAvg())
		}
	}
	for _, who := range contestants {
		var cpu, rate []float64
		for _, x := range all[who] {
			cpu = append(cpu, float64(x.cpu.Microseconds())/1000)
			rate = append(rate, float64(x.slices)/x.seconds)
		}
		fmt.Printf("  %-11s median wake-ups %.2f/s (%s), CPU %.2f ms in %s (%s)\n",
			who, median(rate), fmtList2(rate), median(cpu), window, fmtList2(cpu))
	}
}

// schedstat sums the CPU time and the time slices of pids' threads.
func schedstat(pids []int32) (time.Duration, int64) {
	var cpu, slices int64
	for _, pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // a thread that ended
			}
			if f := strings.Fields(string(b)); len(f) == 3 {
				c, _ := strconv.ParseInt(f[0], 10, 64)
				s, _ := strconv.ParseInt(f[2], 10, 64)
				cpu += c
				slices += s
			}
		}
	}
	return time.Duration(cpu), slices
}

// stopResult is one S4 round of one supervisor.
type stopResult struct {
	stop              time.Duration
	firstTerm, spread time.Duration
	gotTerm, clean    int
}

func runStop(self, podsup, baseline, work string, n int, delay, settle time.Duration, rounds int) {
	contestants, s6 := massContestants("S4", baseline)
	fmt.Printf("\nS4: %d children that exit %s after SIGTERM: from SIGTERM to the supervisor until all are gone (%d rounds)\n", n, delay, rounds)
	all := map[string][]stopResult{}
	for r := 0; r < rounds; r++ {
		for _, who := range rotate(contestants, r) {
			dir, err := os.MkdirTemp(work, "s4-")
			if err != nil {
				fatalf("%v", err)
			}
			notes := filepath.Join(dir, "term.txt")
			var t0 int64
			run := massRun{n: n, argv: []string{self, childMode, "term", delay.String(), notes}, comm: commOf(self), grace: "10s",
				hold: func(*tree, *massResult) error {
					time.Sleep(settle) // every child has its handler
					t0 = monotonic()
					return nil
				}}
			res, err := massOf(who, podsup, baseline, s6, work, run)
			if err != nil {
				fmt.Printf("  round %d %-11s %v\n", r+1, who, err)
				_ = os.RemoveAll(dir)
				continue
			}
			sr := stopNotes(notes, t0)
			_ = os.RemoveAll(dir)
			sr.stop = res.stop
			all[who] = append(all[who], sr)
			fmt.Printf("  round %d %-11s all gone %.3f s  first SIGTERM %.1f ms, spread %.1f ms  clean exits %d/%d  (load %s)\n",
				r+1, who, sr.stop.Seconds(), ms(sr.firstTerm), ms(sr.spread), sr.clean, n, loadAvg())
		}
	}
	for _, who := range contestants {
		var stop, spread []float64
		clean := 0
		for _, x := range all[who] {
			stop = append(stop, x.stop.Seconds())
			spread = append(spread, ms(x.spread))
			clean += x.clean
		}
		fmt.Printf("  %-11s median all gone %.3f s (%s), SIGTERM spread %.1f ms, clean exits %d of %d\n",
			who, median(stop), fmtList3(stop), median(spread), clean, n*len(all[who]))
	}
}

// stopNotes reads what S4's children wrote: "T <pid> <ns>" when SIGTERM
// came, "E <pid> <ns>" when they exited on their own. t0 is when the
// supervisor was sent its SIGTERM, on the same clock (CLOCK_MONOTONIC).
func stopNotes(file string, t0 int64) stopResult {
	var sr stopResult
	b, _ := os.ReadFile(file)
	var first, last int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		at, _ := strconv.ParseInt(f[2], 10, 64)
		switch f[0] {
		case "T":
			if sr.gotTerm == 0 || at < first {
				first = at
			}
			if sr.gotTerm == 0 || at > last {
				last = at
			}
			sr.gotTerm++
		case "E":
			sr.clean++
		}
	}
	if sr.gotTerm > 0 {
		sr.firstTerm, sr.spread = time.Duration(first-t0), time.Duration(last-first)
	}
	return sr
}

// term is S4's child: on SIGTERM it notes "T <pid> <CLOCK_MONOTONIC ns>"
// in file, waits delay, notes "E <pid> <ns>" and exits 0.
func term(delay, file string) int {
	d, err := time.ParseDuration(delay)
	if err != nil {
		return 2
	}
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGTERM)
	<-caught
	pid := strconv.Itoa(os.Getpid())
	appendLine(file, "T "+pid+" "+strconv.FormatInt(monotonic(), 10))
	time.Sleep(d)
	appendLine(file, "E "+pid+" "+strconv.FormatInt(monotonic(), 10))
	return 0
}

// massContestants are podsup, the baseline if any, and s6 if installed
// (its s6-svscan path; "" when not).
func massContestants(title, baseline string) ([]string, string) {
	contestants := []string{"podsup"}
	if baseline != "" {
		contestants = append(contestants, "podsup-base")
	}
	s6, err := exec.LookPath("s6-svscan")
	if err != nil {
		fmt.Printf("%s: s6-svscan is not installed (apt-get install s6): podsup alone\n", title)
		return contestants, ""
	}
	return append(contestants, "s6"), s6
}

// massOf runs r under who.
func massOf(who, podsup, baseline, s6, work string, r massRun) (massResult, error) {
	switch who {
	case "podsup":
		return massPodsup(podsup, work, r)
	case "podsup-base":
		return massPodsup(baseline, work, r)
	case "s6":
		return massS6(s6, work, r)
	}
	return massResult{}, fmt.Errorf("unknown contestant %q", who)
}

// rotate is contestants in round r's order: each round starts with the
// next one, so that the machine's drift hits all alike.
func rotate(contestants []string, r int) []string {
	k := r % len(contestants)
	return append(contestants[k:len(contestants):len(contestants)], contestants[:k]...)
}

// commOf is what the kernel calls a process running path (/proc/PID/comm:
// the file's name, cut to 15 bytes).
func commOf(path string) string {
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fmtList3(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, " / ")
}
