package notify

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func init() { proc.StartReaper() }

func startProcess(t *testing.T, rt *Runtime, id string, p spec.Process, ex *exits) supervisor.Instance {
	t.Helper()
	inst, err := rt.Start(context.Background(), supervisor.StartRequest{Group: "g", InstanceID: id, Process: p, OnExit: ex.onExit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.KillTree(syscall.SIGKILL) })
	return inst
}

// Debian's real systemd-notify as the child: --ready and --status make it
// ready (and started: no startup probe) with its status line, and it exits
// 0 promptly, because podsup closes the fd of its BARRIER=1 (otherwise
// systemd-notify waits 5 s for it and fails).
func TestSystemdNotifyChild(t *testing.T) {
	bin, err := exec.LookPath("systemd-notify")
	if err != nil {
		t.Skip("needs systemd-notify (Debian package systemd; .ci/run installs it): " + err.Error())
	}
	srv, sink := startServer(t, Options{})
	rt := &Runtime{Server: srv}
	ex := newExits()
	begin := time.Now()
	startProcess(t, rt, "g.1.app", spec.Process{Name: "app", Command: []string{bin, "--ready", "--status=serving 3 clients"}, Readiness: "notify"}, ex)
	got := map[string]result{}
	for len(got) < 3 {
		r := sink.next(t)
		got[string(r.kind)] = r
	}
	if r := got[string(spec.Startup)]; !r.success || r.instance != "g.1.app" {
		t.Errorf("startup: %+v", r)
	}
	if r := got[string(spec.Readiness)]; !r.success || r.instance != "g.1.app" {
		t.Errorf("readiness: %+v", r)
	}
	if r := got[""]; r.msg != "serving 3 clients" {
		t.Errorf("status: %+v", r)
	}
	st := ex.wait(t, 10*time.Second)
	if st.Code != 0 {
		t.Errorf("systemd-notify exited %d, want 0 (BARRIER=1 not answered?)", st.Code)
	}
	if d := time.Since(begin); d > 4*time.Second {
		t.Errorf("systemd-notify took %s: it waited for its barrier", d)
	}
}

// s6's protocol: a newline on fd N makes the process ready; fds between 3
// and N stay closed.
func TestFdReadiness(t *testing.T) {
	srv, sink := startServer(t, Options{})
	rt := &Runtime{Server: srv}
	ex := newExits()
	p := spec.Process{Name: "app", Readiness: "fd:5", StartupProbe: &spec.Probe{},
		Command: []string{"sh", "-c", `{ true >&3; } 2>/dev/null && exit 9; sleep 0.2; echo >&5; exec sleep 100`}}
	startProcess(t, rt, "g.1.app", p, ex)
	r := sink.next(t)
	if r.kind != spec.Readiness || !r.success || r.instance != "g.1.app" {
		t.Fatalf("got %+v, want readiness (and no startup: it has a startup probe)", r)
	}
	sink.none(t, 100*time.Millisecond)
	select {
	case st := <-ex.c:
		t.Fatalf("exited %d (9: fd 3 was open)", st.Code)
	default:
	}
}

// A process that closes its fd without a newline is not ready.
func TestFdReadinessEOF(t *testing.T) {
	srv, sink := startServer(t, Options{})
	ex := newExits()
	startProcess(t, &Runtime{Server: srv}, "g.1.app", spec.Process{Name: "app", Readiness: "fd:3", Command: []string{"sh", "-c", "printf x >&3"}}, ex)
	ex.wait(t, 10*time.Second)
	sink.none(t, 200*time.Millisecond)
}

// Messages are attributed by socket: each instance has its own, and the
// socket of an exited instance is gone.
func TestAttributionBySocket(t *testing.T) {
	srv, sink := startServer(t, Options{})
	a, err := srv.Attach(Instance{Group: "g", InstanceID: "g.1.a", Process: spec.Process{Name: "a", Readiness: "notify"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := srv.Attach(Instance{Group: "g", InstanceID: "g.2.a", Process: spec.Process{Name: "a", Readiness: "notify"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Env["NOTIFY_SOCKET"] == b.Env["NOTIFY_SOCKET"] {
		t.Fatal("two instances share a socket")
	}
	send(t, b.Env["NOTIFY_SOCKET"], "STATUS=from b")
	send(t, a.Env["NOTIFY_SOCKET"], "STATUS=from a")
	for _, want := range []result{{instance: "g.2.a", msg: "from b"}, {instance: "g.1.a", msg: "from a"}} {
		if r := sink.next(t); r != want {
			t.Fatalf("got %+v, want %+v", r, want)
		}
	}
	a.Detach()
	a.Detach() // idempotent
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(a.Env["NOTIFY_SOCKET"]); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the detached instance's socket is still there")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Detach()
}

func send(t *testing.T, path, msg string) {
	t.Helper()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// STOPPING=1 and RELOADING=1 make the process not ready; READY=1 again
// makes it ready; fds passed with a message are closed (BARRIER=1).
func TestNotifyMessages(t *testing.T) {
	srv, sink := startServer(t, Options{})
	a, err := srv.Attach(Instance{Group: "g", InstanceID: "g.1.a", Process: spec.Process{Name: "a", Readiness: "notify"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	path := a.Env["NOTIFY_SOCKET"]
	send(t, path, "READY=1\nSTATUS=up\nMAINPID=1234")
	want := []result{
		{"g.1.a", spec.Startup, true, "READY=1"},
		{"g.1.a", spec.Readiness, true, "READY=1"},
		{"g.1.a", "", false, "up"},
	}
	send(t, path, "RELOADING=1")
	want = append(want, result{"g.1.a", spec.Readiness, false, "RELOADING=1"})
	send(t, path, "STOPPING=1")
	want = append(want, result{"g.1.a", spec.Readiness, false, "STOPPING=1"})
	for _, w := range want {
		if r := sink.next(t); r != w {
			t.Fatalf("got %+v, want %+v", r, w)
		}
	}
	// BARRIER=1 with a pipe: podsup closes its copy, the read end sees EOF.
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = syscall.Sendmsg(fd, []byte("BARRIER=1"), syscall.UnixRights(p[1]), &syscall.SockaddrUnix{Name: path}, 0)
	syscall.Close(fd)
	syscall.Close(p[1])
	if err != nil {
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() {
		var b [1]byte
		n, err := syscall.Read(p[0], b[:])
		if n != 0 {
			err = errors.New("data on the barrier pipe")
		}
		eof <- err
	}()
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the barrier fd was not closed")
	}
	syscall.Close(p[0])
}

// The watchdog: WATCHDOG=1 re-arms it; a miss reports one failed liveness
// result, "watchdog timeout"; WATCHDOG_USEC= changes the interval.
func TestNotifyWatchdog(t *testing.T) {
	fc := clock.NewFake(clock.Epoch)
	srv, sink := startServer(t, Options{Clock: fc})
	a, err := srv.Attach(Instance{Group: "g", InstanceID: "g.1.a", Process: spec.Process{Name: "a", Readiness: "notify", Watchdog: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	if a.Env["WATCHDOG_USEC"] != "10000000" {
		t.Fatalf("WATCHDOG_USEC=%q", a.Env["WATCHDOG_USEC"])
	}
	path := a.Env["NOTIFY_SOCKET"]
	// sync makes sure everything sent before it was handled.
	sync := func(tag string) {
		send(t, path, "STATUS="+tag)
		if r := sink.next(t); r.msg != tag {
			t.Fatalf("got %+v, want status %q", r, tag)
		}
	}
	for i := 0; i < 3; i++ {
		fc.Advance(9 * time.Second)
		send(t, path, "WATCHDOG=1")
		sync("fed")
	}
	fc.Advance(9 * time.Second)
	sink.none(t, 50*time.Millisecond)
	send(t, path, "WATCHDOG_USEC=2000000")
	sync("shorter")
	fc.Advance(2 * time.Second)
	r := sink.next(t)
	if r.kind != spec.Liveness || r.success || !strings.Contains(r.msg, "watchdog timeout") {
		t.Fatalf("got %+v, want a failed liveness result for the watchdog", r)
	}
	fc.Advance(time.Minute)
	send(t, path, "WATCHDOG=1")
	sync("after")
	fc.Advance(time.Minute)
	sink.none(t, 50*time.Millisecond) // one miss is reported once
}

// Socket activation: the named socket becomes fd 3 with LISTEN_FDS,
// LISTEN_FDNAMES and LISTEN_PID = the process's pid (the __listenpid
// shim); after the process ends, the next instance accepts on the same
// socket: podsup kept it open.
func TestSocketActivation(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exe := testExe(t)
	rt := &Runtime{Sockets: map[string][]*os.File{"web": {f}}, Self: exe}
	p := spec.Process{Name: "web", Sockets: []string{"web"}, Command: []string{exe}, Env: map[string]string{helperEnv: "accept"}}
	for i, id := range []string{"g.1.web", "g.2.web"} {
		ex := newExits()
		inst := startProcess(t, rt, id, p, ex)
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 32)
		n, _ := c.Read(buf)
		c.Close()
		if got := strings.TrimSpace(string(buf[:n])); got != itoa(inst.Pid()) {
			t.Fatalf("instance %d answered %q, want its pid %d", i, got, inst.Pid())
		}
		if st := ex.wait(t, 10*time.Second); st.Code != 0 {
			t.Fatalf("instance %d exited %d", i, st.Code)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A start that cannot get what it asks for fails with a StartError.
func TestRuntimeRefusals(t *testing.T) {
	srv, _ := startServer(t, Options{})
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rt := &Runtime{Server: srv, Sockets: map[string][]*os.File{"web": {f}}}
	cases := []struct {
		p    spec.Process
		want error
	}{
		{spec.Process{Name: "a", Command: []string{"true"}, Sockets: []string{"api"}}, ErrUnknownSocket},
		{spec.Process{Name: "a", Command: []string{"true"}, Sockets: []string{"web"}, Readiness: "fd:3"}, ErrFdConflict},
	}
	for _, c := range cases {
		_, err := rt.Start(context.Background(), supervisor.StartRequest{Group: "g", InstanceID: "g.1.a", Process: c.p, OnExit: func(lifecycle.ExitStatus) {}})
		var se *supervisor.StartError
		if !errors.As(err, &se) || !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want a StartError wrapping %v", c.p, err, c.want)
		}
	}
	_, err = (&Runtime{}).Start(context.Background(), supervisor.StartRequest{Process: spec.Process{Name: "a", Command: []string{"true"}, Readiness: "notify"}})
	if !errors.Is(err, ErrNoServer) {
		t.Errorf("no server: %v", err)
	}
}
