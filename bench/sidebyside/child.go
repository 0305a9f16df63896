package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
)

// childMode is argv[1] of this program re-executed as a benchmark child.
const childMode = "__sidebyside_child"

func runChild(mode string, args []string) int {
	switch mode {
	case "sigrecv":
		return sigrecv(args[0])
	case "term":
		if len(args) != 2 {
			return 2
		}
		return term(args[0], args[1])
	case "floor":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return 2
		}
		n, err := proc.ForkExecFloor(args[1:], d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return 1
		}
		fmt.Println(n)
		return 0
	case "floor-attrs":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return 2
		}
		n, err := floorWithAttrs(args[1:], d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return 1
		}
		fmt.Println(n)
		return 0
	}
	return 2
}

// floorWithAttrs runs the fork+exec floor with the spawn attributes every
// process of podsup's gets (proc.FloorSpawn): its own process group, a
// pidfd, this program's environment (podsup passes its own on), and,
// where a cgroup2 hierarchy is mounted, placement at fork into a cgroup
// directory of its own, made here and removed after: the harness's
// SIGTERM at the end of the window is ignored, the loop ends on its own
// moments later.
func floorWithAttrs(argv []string, d time.Duration) (int, error) {
	signal.Ignore(syscall.SIGTERM)
	how := proc.FloorSpawn{LikeStart: true, Env: os.Environ()}
	if l, err := cgroups.Detect(); err == nil && l.V2 != nil {
		if own, err := l.V2.OwnDir(); err == nil {
			how.CgroupDir = filepath.Join(own, fmt.Sprintf("sidebyside-floor-%d", os.Getpid()))
			if err := os.Mkdir(how.CgroupDir, 0o755); err != nil {
				return 0, err
			}
			defer os.Remove(how.CgroupDir)
		}
	}
	return proc.ForkExecFloorAs(argv, d, how)
}

// sigrecv is S5's child: it appends "R" to file when ready, and on SIGTERM
// "G <CLOCK_MONOTONIC ns>" taken the moment the signal is in its hands,
// then exits 0. It takes SIGTERM with sigtimedwait on its main thread
// (still locked there by init), as a C program's handler would run: the
// kernel offers a process-directed signal to the main thread first, so no
// Go runtime hop is measured. os/signal catches one that lands on another
// thread all the same.
func sigrecv(file string) int {
	var set uint64 = 1 << (uint(syscall.SIGTERM) - 1)
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0); errno != 0 {
		return 3
	}
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGTERM)
	go func() {
		<-caught
		appendLine(file, "G "+strconv.FormatInt(monotonic(), 10))
		os.Exit(0)
	}()
	appendLine(file, "R")
	for {
		r, _, errno := unix.Syscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), 0, 0, 8, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || syscall.Signal(r) != syscall.SIGTERM {
			return 4
		}
		appendLine(file, "G "+strconv.FormatInt(monotonic(), 10))
		return 0
	}
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func appendLine(file, line string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}
