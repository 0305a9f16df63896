package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

// sdConfig: a notify process (the real systemd-notify), an s6 fd:3
// process, and a socket-activated process that exits after each
// connection (so it is restarted on the same socket).
const sdConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "200ms"
}
group "web" {
  termination_grace_period = "2s"
  process "api" {
    command   = ["sh", "-c", "%s --ready --status='serving 3 clients' && exec sleep 1000"]
    readiness = "notify"
  }
}
group "worker" {
  process "w" {
    command   = ["sh", "-c", "sleep 0.2; echo >&3; exec sleep 1000"]
    readiness = "fd:3"
  }
}
group "front" {
  process "web" {
    command = [%s]
    sockets = ["web"]
  }
}
`

// podsup up under a fake systemd manager (NOTIFY_SOCKET, WATCHDOG_USEC,
// and a listening socket passed as systemd passes it): the notify stream
// for start → ready → reload → stop is exactly the one in package
// systemd's doc, systemd-notify works as a child's readiness signal, and
// the socket survives the process's restarts.
func TestUpUnderSystemd(t *testing.T) {
	t.Parallel()
	notifyBin, err := exec.LookPath("systemd-notify")
	if err != nil {
		t.Skip("needs systemd-notify (Debian package systemd; .ci/run installs it): " + err.Error())
	}
	dir := t.TempDir()
	mgr := listenGram(t, filepath.Join(dir, "manager.sock"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()

	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	var argv []string
	for _, a := range helperArgv(t, "accept") {
		argv = append(argv, fmt.Sprintf("%q", a))
	}
	f.write(t, fmt.Sprintf(sdConfig, f.socket, notifyBin, strings.Join(argv, ", ")))
	// systemd sets LISTEN_PID to the pid it execs; the shim does the same.
	c := podsupCmd(t, "__listenpid", testExe(t), "up", "-f", f.cfg)
	c.Env = append(c.Env, "NOTIFY_SOCKET="+mgr.path, "WATCHDOG_USEC=400000", "LISTEN_FDS=1", "LISTEN_FDNAMES=web")
	c.ExtraFiles = []*os.File{lf}
	f.up = start(t, c)
	f.c = api.NewClient(f.socket)

	// Start: READY=1 only once all three groups are ready.
	msgs := mgr.until(t, func(m string) bool { return strings.HasPrefix(m, "READY=1") })
	if got := msgs[len(msgs)-1]; got != "READY=1\nSTATUS=3/3 groups ready, 0 in back-off" {
		t.Fatalf("READY message %q (before it: %q)", got, msgs)
	}
	// systemd-notify made api ready at once (no 5 s barrier hang, no
	// restart) and its status line shows.
	code, out := f.ctl(t, "status", "web/api", "-o", "json")
	if code != 0 || !strings.Contains(out, `"status_text": "serving 3 clients"`) || !strings.Contains(out, `"restart_count": 0`) || !strings.Contains(out, `"ready": true`) {
		t.Fatalf("status of web/api: %s", out)
	}
	// Socket activation: two instances in turn answer on the same socket.
	var pids []string
	for i := 0; i < 2; i++ {
		var answer string
		if !eventually(func() bool {
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				return false
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 32)
			n, _ := conn.Read(b)
			answer = strings.TrimSpace(string(b[:n]))
			return answer != ""
		}) {
			t.Fatalf("connection %d not answered: %s", i, f.up.sofar(t))
		}
		pids = append(pids, answer)
	}
	if pids[0] == pids[1] {
		t.Fatalf("both connections answered by pid %s: want a restarted instance", pids[0])
	}

	// Reload: RELOADING=1 with MONOTONIC_USEC, then READY=1.
	if code, out := f.ctl(t, "reload"); code != 0 {
		t.Fatalf("reload: %d %s", code, out)
	}
	if code, out := f.ctl(t, "shutdown"); code != 0 {
		t.Fatalf("shutdown: %d %s", code, out)
	}
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup exited %d", e.Code())
	}
	msgs = append(msgs, mgr.drain()...)
	var stream []string
	watchdogs := 0
	for _, m := range msgs {
		switch {
		case m == "WATCHDOG=1":
			watchdogs++
		case strings.HasPrefix(m, "STATUS=") && !strings.Contains(m, "\n"):
			// Status-only lines come as groups change, never during a reload.
			if strings.Contains(m, "reloading") {
				t.Errorf("a status-only line during the reload: %q", m)
			}
		default:
			stream = append(stream, m)
		}
	}
	want := []string{
		"READY=1\nSTATUS=3/3 groups ready, 0 in back-off",
		"RELOADING=1\nMONOTONIC_USEC=*\nSTATUS=reloading configuration",
		"READY=1\nSTATUS=*",
		"STOPPING=1\nSTATUS=stopping: *",
	}
	if len(stream) != len(want) {
		t.Fatalf("notify stream %q, want %q", stream, want)
	}
	for i, w := range want {
		if !globLines(w, stream[i]) {
			t.Errorf("message %d: %q, want %q", i, stream[i], w)
		}
	}
	if watchdogs < 2 {
		t.Errorf("%d WATCHDOG=1 in the run, want a steady stream (every 200ms)", watchdogs)
	}
}

// globLines matches line by line; a trailing * matches any rest of a line.
func globLines(pattern, s string) bool {
	pl, sl := strings.Split(pattern, "\n"), strings.Split(s, "\n")
	if len(pl) != len(sl) {
		return false
	}
	for i := range pl {
		if p, ok := strings.CutSuffix(pl[i], "*"); ok {
			if !strings.HasPrefix(sl[i], p) {
				return false
			}
		} else if pl[i] != sl[i] {
			return false
		}
	}
	return true
}

// gram is a unixgram socket playing systemd's notify socket.
type gram struct {
	path string
	c    chan string
}

func listenGram(t *testing.T, path string) *gram {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	g := &gram{path: path, c: make(chan string, 4096)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := conn.Read(b)
			if err != nil {
				return
			}
			g.c <- string(b[:n])
		}
	}()
	return g
}

// until collects messages up to and including the first that matches.
func (g *gram) until(t *testing.T, match func(string) bool) []string {
	t.Helper()
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-g.c:
			got = append(got, m)
			if match(m) {
				return got
			}
		case <-timeout:
			t.Fatalf("no matching notify message within 30s; got %q", got)
		}
	}
}

// drain returns what arrived, after a short grace for stragglers.
func (g *gram) drain() []string {
	var got []string
	for {
		select {
		case m := <-g.c:
			got = append(got, m)
		case <-time.After(200 * time.Millisecond):
			return got
		}
	}
}
