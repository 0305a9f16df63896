package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/api"
)

// No input may crash or starve podsup: a configuration file (validated,
// loaded or reloaded) or a request to its API. The parser runs in podsup,
// a child of the test: a stack overflow there is fatal and would take the
// test binary with it.

const oneProcessConfig = `
supervisor {
  socket = "%s"
}
group "g" {
  process "p" {
    command = ["sleep", "1004"]
  }
}
`

// deepFile is a valid configuration followed by a value of 100,000
// nested brackets on line 10.
func deepFile(socket string) string {
	return fmt.Sprintf(oneProcessConfig, socket) + "x = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
}

func TestValidateRefusesDeepNestingWithAnError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "deep.hcl")
	if err := os.WriteFile(path, []byte(deepFile("/tmp/unused.sock")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runPodsup(t, "validate", "-f", path)
	if code != 1 || !strings.Contains(out, path+":10:") || !strings.Contains(out, "Configuration nested too deeply") ||
		strings.Contains(out, "goroutine") || len(out) > 4096 {
		t.Fatalf("validate of 100,000 nested brackets: exit %d, want 1 with a short error at %s:10:\n%.2000s", code, path, out)
	}
}

func TestValidateRefusesAnOversizedFileQuickly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.hcl")
	// 17 MiB of comments: valid HCL, over the 16 MiB podsup reads.
	line := "# " + strings.Repeat("x", 1021) + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 17<<10)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out := runPodsup(t, "validate", "-f", path)
	if code != 1 || !strings.Contains(out, path+":1:1:") || !strings.Contains(out, "Configuration file too large") || !strings.Contains(out, "at most 16 MiB") {
		t.Fatalf("validate of a 17 MiB file: exit %d, want 1 with a size error:\n%s", code, out)
	}
	// Generous: the machine is shared; refusing reads nothing.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("refusing an oversized file took %v", d)
	}
}

// killOrphanOnFailure ends *pid if podsup died and left it to the test
// binary (the subreaper), so that a failing run leaves nothing behind.
// Registered before startUp, it runs after startUp's cleanup has stopped
// podsup (and with it, when podsup lives, the process).
func killOrphanOnFailure(t *testing.T, pid *int) {
	t.Cleanup(func() {
		if *pid <= 0 {
			return
		}
		if _, ppid, ok := procStat(*pid); !ok || ppid != os.Getpid() {
			return
		}
		fd, err := unix.PidfdOpen(*pid, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		t.Logf("killing pid %d, which podsup left behind", *pid)
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	})
}

func TestReloadOfADeepFileKeepsPodsupAndItsProcess(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"podsup reload", "SIGHUP"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			var pid int
			killOrphanOnFailure(t, &pid)
			f := startUp(t, oneProcessConfig)
			pid = f.waitRunning(t, "g", "p")
			f.write(t, deepFile(f.socket))
			if how == "SIGHUP" {
				if err := f.up.p.Signal(syscall.SIGHUP); err != nil {
					t.Fatal(err)
				}
				if !f.up.waitForLine(t, "Configuration nested too deeply") {
					t.Fatalf("podsup did not log the refused reload")
				}
			} else {
				code, out := f.ctl(t, "reload")
				if code == 0 || !strings.Contains(out, "podsup.hcl:10:") || !strings.Contains(out, "Configuration nested too deeply") || !strings.Contains(out, "running configuration stays") {
					t.Fatalf("reload of 100,000 nested brackets: exit %d\n%.2000s", code, out)
				}
			}
			select {
			case <-f.up.p.Done():
				t.Fatalf("podsup died on the reload: %s\n%.2000s", f.up.p.Exit(), f.up.rest(t))
			default:
			}
			code, out := f.ctl(t, "status")
			if code != 0 || !strings.Contains(out, "running") {
				t.Fatalf("status after the reload: %d\n%s", code, out)
			}
			if p := f.pid(t, "g", "p"); p != pid {
				t.Fatalf("g/p changed from pid %d to %d", pid, p)
			}
		})
	}
}

// waitForLine reads podsup's output until a line contains want.
func (s *started) waitForLine(t *testing.T, want string) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l, err := s.out.ReadString('\n')
		if strings.Contains(l, want) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

func TestAPIRefusesOversizedAndGarbageBodies(t *testing.T) {
	t.Parallel()
	f := startUp(t, oneProcessConfig)
	pid := f.waitRunning(t, "g", "p")
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", f.socket)
	}}, Timeout: time.Minute}
	for name, tc := range map[string]struct {
		body string
		want int
	}{
		"2 MiB":         {`{"grace": "` + strings.Repeat("1", 2<<20) + `s"}`, http.StatusRequestEntityTooLarge},
		"garbage":       {"\x00\x01 not json", http.StatusBadRequest},
		"trailing data": {`{"grace": "1s"} and then some`, http.StatusBadRequest},
		"deep":          {strings.Repeat(`{"grace":`, 100_000), http.StatusBadRequest},
	} {
		resp, err := c.Post("http://podsup/v1/groups/g/processes/p/stop", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var e api.Error
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.want || err != nil || e.Message == "" {
			t.Errorf("%s body: %d %+v (%v), want %d with a message", name, resp.StatusCode, e, err, tc.want)
		}
	}
	// None of them stopped the process, and podsup still answers.
	if p := f.pid(t, "g", "p"); p != pid {
		t.Fatalf("g/p changed from pid %d to %d", pid, p)
	}
}
