package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// S1's child: a program that exits at once.
const s1Child = "/bin/true"

// warmUp is run before S1's window opens.
const warmUp = time.Second

// runS1 measures, per round, the exit → next exec latency of a process
// that exits at once, under `podsup up` and under the fork+exec floor,
// alternating, from the kernel's own fork/exec/exit event timestamps
// (CLOCK_MONOTONIC, the proc connector): the child needs no clock of its
// own, and both contestants are measured the same way.
func runS1(self, podsup, baseline, work string, rounds int, window time.Duration) {
	fmt.Printf("\nS1: restart reaction, %s exit -> next exec (%d rounds x %s windows, µs)\n", s1Child, rounds, window)
	type res struct{ p50, p99, perSec, toFork, toExec, cpu float64 }
	all := map[string][]res{}
	contestants := []string{"podsup", "floor", "floor-attrs"}
	if baseline != "" {
		contestants = append(contestants, "podsup-base")
	}
	for r := 0; r < rounds; r++ {
		// Rotate the order, so that the machine's drift hits all alike.
		order := append(contestants[r%len(contestants):len(contestants):len(contestants)], contestants[:r%len(contestants)]...)
		for _, who := range order {
			var (
				lat   []float64
				split splits
				n     int
				cpu   time.Duration
				err   error
			)
			switch who {
			case "podsup":
				lat, split, n, cpu, err = s1Podsup(podsup, work, window)
			case "podsup-base":
				lat, split, n, cpu, err = s1Podsup(baseline, work, window)
			case "floor-attrs":
				lat, split, n, cpu, err = s1Floor(self, "floor-attrs", window)
			default:
				lat, split, n, cpu, err = s1Floor(self, "floor", window)
			}
			if err != nil {
				fmt.Printf("  round %d %s: %v\n", r+1, who, err)
				continue
			}
			x := res{percentile(lat, .5), percentile(lat, .99), float64(n) / window.Seconds(), median(split.toFork), median(split.toExec), 0}
			if n > 0 {
				x.cpu = float64(cpu.Microseconds()) / float64(n)
			}
			all[who] = append(all[who], x)
			fmt.Printf("  round %d %-11s p50 %6.0f  p99 %6.0f  %5.0f restarts/s (%d pairs; p50 exit->fork %4.0f, fork->exec %4.0f; CPU/restart %4.0f)\n",
				r+1, who, x.p50, x.p99, x.perSec, len(lat), x.toFork, x.toExec, x.cpu)
		}
	}
	pick := func(who string, f func(res) float64) []float64 {
		var v []float64
		for _, x := range all[who] {
			v = append(v, f(x))
		}
		return v
	}
	p50 := func(x res) float64 { return x.p50 }
	p99 := func(x res) float64 { return x.p99 }
	toFork := func(x res) float64 { return x.toFork }
	toExec := func(x res) float64 { return x.toExec }
	cpu := func(x res) float64 { return x.cpu }
	for _, who := range contestants {
		fmt.Printf("  %-11s p50 %6.0f µs (rounds %s), p99 %6.0f µs; exit->fork %4.0f, fork->exec %4.0f; CPU/restart %4.0f µs\n", who,
			median(pick(who, p50)), fmtList(pick(who, p50)), median(pick(who, p99)), median(pick(who, toFork)), median(pick(who, toExec)), median(pick(who, cpu)))
	}
	ratio := func(who, floor string) {
		a, b := pick(who, p50), pick(floor, p50)
		if len(a) == len(b) && len(a) > 0 {
			ratios := make([]float64, len(a))
			for i := range a {
				ratios[i] = a[i] / b[i]
			}
			fmt.Printf("  %s / %s p50: %.2fx (median of per-round ratios %s)\n", who, floor, median(ratios), fmtRatios(ratios))
		}
	}
	for _, who := range contestants {
		if !strings.HasPrefix(who, "floor") {
			ratio(who, "floor")
			ratio(who, "floor-attrs")
		}
	}
	ratio("floor-attrs", "floor")
}

const s1Config = `supervisor {
  socket = "%s"
}
backoff {
  initial = "0s"
  max     = "0s"
}
group "bench" {
  restart_policy = "always"
  process "p" {
    command = ["%s"]
  }
}
`

// s1Podsup runs `podsup up` with one always-restarting /bin/true.
func s1Podsup(podsup, work string, window time.Duration) ([]float64, splits, int, time.Duration, error) {
	dir, err := os.MkdirTemp(work, "s1-")
	if err != nil {
		return nil, splits{}, 0, 0, err
	}
	cfg := filepath.Join(dir, "podsup.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(s1Config, filepath.Join(dir, "podsup.sock"), s1Child)), 0o644); err != nil {
		return nil, splits{}, 0, 0, err
	}
	return measureRestarts(window, func() (*proc.Process, error) {
		return proc.Start(&proc.Cmd{Path: podsup, Args: []string{"podsup", "up", "-f", cfg}})
	})
}

// s1Floor runs a floor (mode "floor", the bare one, or "floor-attrs",
// with podsup's spawn attributes) in a process of its own: it waits for
// its child with wait4, which it may not do beside this program's reaper.
func s1Floor(self, mode string, window time.Duration) ([]float64, splits, int, time.Duration, error) {
	d := (warmUp + window + 200*time.Millisecond).String()
	return measureRestarts(window, func() (*proc.Process, error) {
		return proc.Start(&proc.Cmd{Path: self, Args: []string{"sidebyside", childMode, mode, d, s1Child}})
	})
}

// measureRestarts starts a supervisor, records the kernel's process events
// for its children over warm-up and window, stops it with SIGTERM and
// returns the exit → next exec latencies inside the window, with their two
// parts, and the supervisor's CPU time in the window.
func measureRestarts(window time.Duration, startSupervisor func() (*proc.Process, error)) ([]float64, splits, int, time.Duration, error) {
	l, err := listenProcEvents()
	if err != nil {
		return nil, splits{}, 0, 0, fmt.Errorf("process events connector: %w", err)
	}
	defer l.close()
	go l.run()
	sup, err := startSupervisor()
	if err != nil {
		return nil, splits{}, 0, 0, err
	}
	time.Sleep(warmUp)
	from, cpuFrom := monotonic(), threadsCPU(sup.Pid())
	time.Sleep(window)
	to, cpu := monotonic(), threadsCPU(sup.Pid())-cpuFrom
	_ = sup.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sup.Wait(ctx); err != nil {
		_ = sup.KillTree(syscall.SIGKILL)
		<-sup.Done()
	}
	l.stop()
	lat, split, n := restartLatencies(l.events(), int32(sup.Pid()), from, to)
	if l.lost.Load() {
		fmt.Println("  (the events socket overflowed: some restarts were not seen)")
	}
	return lat, split, n, cpu, nil
}

// threadsCPU is the CPU time every thread of pid has had so far, from the
// scheduler's own figures (schedstat's first field, ns): finer than
// /proc/PID/stat's clock ticks. Threads that ended are not in it; the
// supervisors measured here keep theirs.
func threadsCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// splits divides each exit → next exec latency at the next child's fork:
// toFork is what the supervisor does before it forks (waking, deciding,
// preparing), toExec the fork and exec themselves.
type splits struct{ toFork, toExec []float64 }

// restartLatencies pairs each child's exit with the next child's exec.
func restartLatencies(evs []procEvent, parent int32, from, to int64) ([]float64, splits, int) {
	type child struct{ fork, exec, exit int64 }
	kids := map[int32]*child{}
	for _, e := range evs {
		switch e.what {
		case evFork:
			if e.parentTgid == parent && e.pid == e.tgid {
				kids[e.pid] = &child{fork: e.ts}
			}
		case evExec:
			if c := kids[e.pid]; c != nil {
				c.exec = e.ts
			}
		case evExit:
			if c := kids[e.pid]; c != nil && e.pid == e.tgid {
				c.exit = e.ts
			}
		}
	}
	var cs []child
	for _, c := range kids {
		if c.exec >= from && c.exec <= to {
			cs = append(cs, *c)
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].exec < cs[j].exec })
	var (
		lat   []float64
		split splits
	)
	for i := 0; i+1 < len(cs); i++ {
		if cs[i].exit > 0 && cs[i].exit < cs[i+1].fork {
			lat = append(lat, float64(cs[i+1].exec-cs[i].exit)/1e3)
			split.toFork = append(split.toFork, float64(cs[i+1].fork-cs[i].exit)/1e3)
			split.toExec = append(split.toExec, float64(cs[i+1].exec-cs[i+1].fork)/1e3)
		}
	}
	return lat, split, len(cs)
}

// The kernel's process events (linux/cn_proc.h).
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	evFork            = 0x1
	evExec            = 0x2
	evExit            = 0x80000000
)

type procEvent struct {
	what             uint32
	ts               int64 // CLOCK_MONOTONIC ns
	pid, tgid        int32
	parentTgid       int32 // fork only
	exitCode, signal uint32
}

type procEvents struct {
	fd      int
	done    atomic.Bool
	lost    atomic.Bool
	got     []procEvent
	stopped chan struct{}
}

func listenProcEvents() (*procEvents, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, err
	}
	l := &procEvents{fd: fd, stopped: make(chan struct{})}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	// The reader checks done this often: stopping the harness's listener,
	// not part of any measurement.
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	msg := make([]byte, 16+20+4)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.NLMSG_DONE)
	binary.NativeEndian.PutUint32(msg[12:], uint32(os.Getpid()))
	binary.NativeEndian.PutUint32(msg[16:], cnIdxProc)
	binary.NativeEndian.PutUint32(msg[20:], cnValProc)
	binary.NativeEndian.PutUint16(msg[32:], 4)
	binary.NativeEndian.PutUint32(msg[36:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return l, nil
}

func (l *procEvents) run() {
	l.each(func(ev procEvent) { l.got = append(l.got, ev) })
}

// each calls fn with every event until stop.
func (l *procEvents) each(fn func(procEvent)) {
	defer close(l.stopped)
	buf := make([]byte, 1<<16)
	for !l.done.Load() {
		n, _, err := unix.Recvfrom(l.fd, buf, 0)
		if err == unix.ENOBUFS {
			l.lost.Store(true)
			continue
		}
		if err != nil {
			continue // timeout or EINTR: check done
		}
		for b := buf[:n]; len(b) >= 16; {
			size := int(binary.NativeEndian.Uint32(b))
			if size < 16 || size > len(b) {
				break
			}
			if ev, ok := parseProcEvent(b[16:size]); ok {
				fn(ev)
			}
			b = b[(size+3)&^3:]
		}
	}
}

func parseProcEvent(m []byte) (procEvent, bool) {
	const cnHeader = 20
	if len(m) < cnHeader+40 {
		return procEvent{}, false
	}
	p := m[cnHeader:]
	u32 := func(off int) uint32 { return binary.NativeEndian.Uint32(p[off:]) }
	ev := procEvent{what: u32(0), ts: int64(binary.NativeEndian.Uint64(p[8:]))}
	switch ev.what {
	case evFork:
		ev.parentTgid = int32(u32(20))
		ev.pid, ev.tgid = int32(u32(24)), int32(u32(28))
	case evExec:
		ev.pid, ev.tgid = int32(u32(16)), int32(u32(20))
	case evExit:
		ev.pid, ev.tgid = int32(u32(16)), int32(u32(20))
		ev.exitCode, ev.signal = u32(24), u32(28)
	default:
		return procEvent{}, false
	}
	return ev, true
}

func (l *procEvents) stop() {
	l.done.Store(true)
	<-l.stopped
}

func (l *procEvents) events() []procEvent { return l.got }

func (l *procEvents) close() {
	if !l.done.Load() {
		l.stop()
	}
	unix.Close(l.fd)
}

// Statistics.

func median(v []float64) float64 { return percentile(v, .5) }

func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

func fmtList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, " / ")
}

func fmtRatios(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " / ")
}
