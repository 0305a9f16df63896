package execrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

func run(t *testing.T, req Request) Result {
	t.Helper()
	res, err := SandboxRunner{}.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Argv, err)
	}
	return res
}

func TestRunExitCodeAndCombinedOutput(t *testing.T) {
	res := run(t, Request{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Timeout: 10 * time.Second})
	if res.ExitCode != 3 || res.TimedOut || string(res.Output) != "out\nerr\n" || res.Truncated {
		t.Fatalf("got %+v", res)
	}
	if res.Duration <= 0 {
		t.Fatalf("duration %v", res.Duration)
	}
	res = run(t, Request{Argv: []string{"/bin/true"}})
	if res.ExitCode != 0 || len(res.Output) != 0 {
		t.Fatalf("true: %+v", res)
	}
}

func TestRunEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	res := run(t, Request{Argv: []string{"sh", "-c", `printf "%s %s" "$GREETING" "$PWD"`}, RunAs: proc.RunAs{Env: []string{"PATH=/usr/bin:/bin", "GREETING=hi"}, Dir: dir}})
	if string(res.Output) != "hi "+dir {
		t.Fatalf("output %q", res.Output)
	}
}

func TestRunOutputCappedWithoutBlocking(t *testing.T) {
	// P10: 10 KiB kept; the command writes 1 MB and must not block on a
	// full pipe (it would then hit the timeout).
	res := run(t, Request{Argv: []string{"sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x; echo done >&2"}, Timeout: 30 * time.Second})
	if res.TimedOut || res.ExitCode != 0 {
		t.Fatalf("the writer blocked or failed: %+v", res.ExitCode)
	}
	if len(res.Output) != MaxOutput || !res.Truncated || !bytes.Equal(res.Output, bytes.Repeat([]byte("x"), MaxOutput)) {
		t.Fatalf("kept %d bytes, truncated %v", len(res.Output), res.Truncated)
	}
	res = run(t, Request{Argv: []string{"sh", "-c", "echo 123456789"}, OutputLimit: 4})
	if string(res.Output) != "1234" || !res.Truncated {
		t.Fatalf("OutputLimit 4: %q %v", res.Output, res.Truncated)
	}
}

// readPid reads a pid a test command wrote to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gone waits until pid has left the process table (killed and reaped).
func gone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			t.Fatalf("%s pid %d still exists: %s", what, pid, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunTimeoutKillsTree(t *testing.T) {
	// P10, X10: a command that hangs is SIGKILLed at its timeout together
	// with its children; nothing is left behind.
	dir := t.TempDir()
	script := `echo $$ > "$0/sh.pid"; sleep 100 & echo $! > "$0/child.pid"; echo started; wait`
	start := time.Now()
	res := run(t, Request{Argv: []string{"sh", "-c", script, dir}, Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.ExitCode != 128+9 || string(res.Output) != "started\n" {
		t.Fatalf("got %+v %q", res, res.Output)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Fatalf("300ms timeout took %v", el)
	}
	gone(t, "sh", readPid(t, filepath.Join(dir, "sh.pid")))
	gone(t, "grandchild sleep", readPid(t, filepath.Join(dir, "child.pid")))
}

func TestRunTimeoutAfterOutputClosed(t *testing.T) {
	// A command that closes its output and then hangs still times out.
	res := run(t, Request{Argv: []string{"sh", "-c", "exec >/dev/null 2>&1; sleep 100"}, Timeout: 200 * time.Millisecond})
	if !res.TimedOut {
		t.Fatalf("got %+v", res)
	}
}

func TestRunDoesNotWaitForStragglers(t *testing.T) {
	// A background child that keeps the output pipe does not hold the
	// run: the result comes when the command itself exits.
	dir := t.TempDir()
	start := time.Now()
	res := run(t, Request{Argv: []string{"sh", "-c", `sleep 30 & echo $! > "$0/bg.pid"; echo hi`, dir}, Timeout: 20 * time.Second})
	bg := readPid(t, filepath.Join(dir, "bg.pid"))
	t.Cleanup(func() {
		if bg > 0 { // never let a pid <= 0 reach kill(2)
			_ = unix.Kill(bg, unix.SIGKILL)
		}
		gone(t, "straggler", bg)
	})
	if res.TimedOut || res.ExitCode != 0 || string(res.Output) != "hi\n" {
		t.Fatalf("got %+v %q", res, res.Output)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("waited %v for a straggler", el)
	}
}

func TestRunCouldNotStart(t *testing.T) {
	_, err := SandboxRunner{}.Run(context.Background(), Request{Argv: []string{"/nonexistent/podsup-probe"}})
	if !errors.Is(err, proc.ErrCommandNotFound) {
		t.Fatalf("err %v, want ErrCommandNotFound", err)
	}
	if _, err := (SandboxRunner{}).Run(context.Background(), Request{}); err != ErrEmptyCommand {
		t.Fatalf("empty argv: %v", err)
	}
}

func TestRunContextCancelKillsTree(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := SandboxRunner{}.Run(ctx, Request{Argv: []string{"sh", "-c", `echo $$ > "$0/sh.pid"; sleep 100`, dir}})
		done <- err
	}()
	pid := readPid(t, filepath.Join(dir, "sh.pid"))
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	gone(t, "sh", pid)
}

func TestRunUsesSpawnSeam(t *testing.T) {
	// X6: a group's sandbox supplies Spawn to start commands its way.
	var seen *proc.Cmd
	r := SandboxRunner{Spawn: func(c *proc.Cmd) (*proc.Process, error) {
		seen = c
		return proc.Start(c)
	}}
	res, err := r.Run(context.Background(), Request{Argv: []string{"echo", "via seam"}, RunAs: proc.RunAs{User: "", Dir: "/"}})
	if err != nil || string(res.Output) != "via seam\n" || seen == nil || seen.Dir != "/" {
		t.Fatalf("got %+v %v, seam saw %+v", res, err, seen)
	}
}

func BenchmarkRunTrue(b *testing.B) {
	// One exec probe round-trip: pipe, spawn, EOF, exit from the reaper.
	r := SandboxRunner{}
	req := Request{Argv: []string{"/bin/true"}, Timeout: 10 * time.Second}
	for i := 0; i < b.N; i++ {
		if res, err := r.Run(context.Background(), req); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}
