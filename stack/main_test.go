package stack_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// subreaperChildEnv makes the test binary a child that assembles a stack
// (Subreaper as the variable says: "on" or "off"), prints whether it is a
// child subreaper and exits: the reaper and the subreaper flag belong to
// the whole process, so each choice needs a process of its own.
const subreaperChildEnv = "PODSUP_STACK_TEST_SUBREAPER"

func TestMain(m *testing.M) {
	stack.ReexecMain() // the test binary is its own sandbox holder
	if v := os.Getenv(subreaperChildEnv); v != "" {
		os.Exit(subreaperChild(v == "on"))
	}
	os.Exit(m.Run())
}

func subreaperChild(on bool) int {
	st, err := stack.New(spec.Config{}, stack.Options{Instance: fmt.Sprintf("stacktest-%d", os.Getpid()), Subreaper: on})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer st.Close()
	// PR_GET_CHILD_SUBREAPER stores the flag at arg2: a heap int, which
	// does not move.
	flag := new(int32)
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(flag)), 0, 0, 0); err != nil {
		fmt.Println(err)
		return 1
	}
	runtime.KeepAlive(flag)
	fmt.Printf("subreaper=%d\n", *flag)
	return 0
}

var instances atomic.Int32

// newInstance is a stack instance name of this test process's own:
// podsup-stacktest-PID-N cgroups are this package's.
func newInstance() string {
	return fmt.Sprintf("stacktest-%d-%d", os.Getpid(), instances.Add(1))
}

// lineWriter is an Options.Output whose lines arrive on a channel.
type lineWriter struct {
	w     *io.PipeWriter
	lines chan string
}

func newLineWriter(t *testing.T) *lineWriter {
	r, w := io.Pipe()
	lw := &lineWriter{w: w, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lw.lines <- sc.Text():
			default: // nobody reads so many: drop
			}
		}
	}()
	t.Cleanup(func() { w.Close() })
	return lw
}

func (lw *lineWriter) Write(b []byte) (int, error) { return lw.w.Write(b) }

// next is the next captured line's text (after "group/process | "), or
// fails t after a generous minute.
func (lw *lineWriter) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-lw.lines:
		if _, text, ok := strings.Cut(l, " | "); ok {
			return text
		}
		return l
	case <-time.After(time.Minute):
		t.Fatal("no captured line within a minute")
		return ""
	}
}

// runningPid waits until group/process runs and returns its pid.
func runningPid(t *testing.T, sup *supervisor.Supervisor, group, process string) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if g, ok := sup.Status().Group(group); ok {
			if p, ok := g.Process(process); ok && p.State == lifecycle.StateRunning && p.Pid > 0 {
				return p.Pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s/%s not running within a minute", group, process)
	return 0
}

// assertNothingLeft fails t when pid still exists or a cgroup of instance
// is left anywhere.
func assertNothingLeft(t *testing.T, instance string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if pid <= 0 {
			t.Errorf("no pid to check: %d", pid)
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			t.Errorf("process %d is still there: %s", pid, b)
		}
	}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/podsup-" + instance)
	more, _ := filepath.Glob("/sys/fs/cgroup/podsup-" + instance)
	if left := append(dirs, more...); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}
