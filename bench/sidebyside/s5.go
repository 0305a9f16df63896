package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// wrapper is an S5 contestant: the argv prefix that runs CMD under it.
type wrapper struct {
	name   string
	prefix []string
}

// findWrappers keeps the named wrappers that are installed, in order.
func findWrappers(podsup string, names []string) []wrapper {
	var ws []wrapper
	for _, n := range names {
		switch n = strings.TrimSpace(n); n {
		case "podsup":
			ws = append(ws, wrapper{n, []string{podsup, "run", "--"}})
		case "none":
			ws = append(ws, wrapper{n, nil})
		case "tini", "dumb-init", "catatonit":
			path, err := exec.LookPath(n)
			if err != nil {
				fmt.Printf("S5: %s is not installed (apt-get install %s): skipped\n", n, n)
				continue
			}
			prefix := []string{path, "--"}
			if n == "dumb-init" {
				prefix = []string{path} // dumb-init takes no "--"
			}
			ws = append(ws, wrapper{n, prefix})
		default:
			fatalf("unknown wrapper %q", n)
		}
	}
	return ws
}

// runS5 measures, per round and wrapper, the median latency from SIGTERM
// sent to the wrapper (PID 1 of a new PID namespace) to the child holding
// it, and prints medians and ratios to the first wrapper (podsup).
func runS5(self, work string, ws []wrapper, rounds, trials int) {
	fmt.Printf("\nS5: SIGTERM to PID 1 -> child's handler runs (%d rounds x %d trials, medians in µs)\n", rounds, trials)
	perRound := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		// Rotate the order each round: nobody always goes first.
		for i := range ws {
			w := ws[(i+r)%len(ws)]
			var lat []float64
			for t := 0; t < trials; t++ {
				us, err := s5Trial(self, work, w)
				if err != nil {
					fmt.Printf("  %s: trial %d: %v\n", w.name, t, err)
					continue
				}
				lat = append(lat, us)
			}
			if len(lat) > 0 {
				perRound[w.name] = append(perRound[w.name], median(lat))
			}
		}
		var line []string
		for _, w := range ws {
			if v := perRound[w.name]; len(v) > r {
				line = append(line, fmt.Sprintf("%s %.0f", w.name, v[r]))
			}
		}
		fmt.Printf("  round %d: %s\n", r+1, strings.Join(line, ", "))
	}
	printS5(ws, perRound)
}

func printS5(ws []wrapper, perRound map[string][]float64) {
	fmt.Printf("  %-10s %10s %s\n", "wrapper", "median µs", "per round")
	for _, w := range ws {
		fmt.Printf("  %-10s %10.0f %s\n", w.name, median(perRound[w.name]), fmtList(perRound[w.name]))
	}
	base := perRound["podsup"]
	for _, w := range ws {
		if w.name == "podsup" || w.name == "none" || len(perRound[w.name]) != len(base) || len(base) == 0 {
			continue
		}
		ratios := make([]float64, len(base))
		for i := range base {
			ratios[i] = base[i] / perRound[w.name][i]
		}
		fmt.Printf("  podsup / %-10s %.2fx (median of per-round ratios %s)\n", w.name, median(ratios), fmtRatios(ratios))
	}
}

// s5Trial runs `WRAPPER... self sigrecv FILE` as PID 1 of a new PID
// namespace, waits until the child is ready and settled, sends SIGTERM to
// the wrapper through its pidfd and returns the microseconds until the
// child had it.
func s5Trial(self, work string, w wrapper) (float64, error) {
	file := filepath.Join(work, "sigrecv")
	_ = os.Remove(file)
	argv := append(append([]string{}, w.prefix...), self, childMode, "sigrecv", file)
	p, err := proc.Start(&proc.Cmd{Path: argv[0], Args: argv, Cloneflags: unix.CLONE_NEWPID})
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", w.name, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := p.Wait(ctx); err != nil {
			_ = p.KillTree(syscall.SIGKILL) // its own process group, never ours
			<-p.Done()
		}
	}()
	if !waitFor(func() bool { b, _ := os.ReadFile(file); return strings.HasPrefix(string(b), "R") }, 10*time.Second) {
		_ = p.Signal(syscall.SIGKILL) // PID 1 of its namespace: the namespace goes with it
		return 0, fmt.Errorf("child never ready")
	}
	time.Sleep(50 * time.Millisecond) // let every thread settle into its wait
	sent := monotonic()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	var got int64
	if !waitFor(func() bool { got = receivedAt(file); return got > 0 }, 5*time.Second) {
		_ = p.Signal(syscall.SIGKILL)
		return 0, fmt.Errorf("the child never got SIGTERM")
	}
	return float64(got-sent) / 1e3, nil
}

// receivedAt reads the "G ns" line of sigrecv's file, 0 until it is there.
func receivedAt(file string) int64 {
	b, _ := os.ReadFile(file)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "G "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// waitFor polls cond every millisecond: the harness's own readiness check,
// outside what is measured.
func waitFor(cond func() bool, limit time.Duration) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
