package notify

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The test binary is its own child: as `__listenpid` it is the shim, and
// with PODSUP_TEST_HELPER set it runs a small workload.
const helperEnv = "PODSUP_TEST_HELPER"

var helpers = map[string]func() int{
	// accept checks the socket-activation environment, then answers one
	// connection on fd 3 with its pid and exits.
	"accept": func() int {
		if got, want := os.Getenv("LISTEN_PID"), strconv.Itoa(os.Getpid()); got != want {
			fmt.Fprintf(os.Stderr, "LISTEN_PID=%s, want %s\n", got, want)
			return 3
		}
		if os.Getenv("LISTEN_FDS") != "1" || os.Getenv("LISTEN_FDNAMES") != "web" {
			fmt.Fprintf(os.Stderr, "LISTEN_FDS=%s LISTEN_FDNAMES=%s\n", os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES"))
			return 4
		}
		l, err := net.FileListener(os.NewFile(3, "web"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 6
		}
		fmt.Fprintf(c, "%d\n", os.Getpid())
		c.Close()
		return 0
	},
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ListenPIDCommand {
		os.Exit(ListenPIDMain(os.Args[2:]))
	}
	if name := os.Getenv(helperEnv); name != "" {
		os.Exit(helpers[name]())
	}
	os.Exit(m.Run())
}

// result is one call a fakeSink received.
type result struct {
	instance string
	kind     spec.ProbeKind // "" for a status line
	success  bool
	msg      string
}

// fakeSink records what the Server delivers.
type fakeSink struct {
	c chan result
}

func newFakeSink() *fakeSink { return &fakeSink{c: make(chan result, 256)} }

func (s *fakeSink) ProbeResult(group, id string, kind spec.ProbeKind, success bool, msg string) error {
	s.c <- result{id, kind, success, msg}
	return nil
}

func (s *fakeSink) ReportStatus(group, id, text string) error {
	s.c <- result{id, "", false, text}
	return nil
}

func (s *fakeSink) next(t *testing.T) result {
	t.Helper()
	select {
	case r := <-s.c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered within 10s")
		return result{}
	}
}

func (s *fakeSink) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case r := <-s.c:
		t.Fatalf("unexpected delivery %+v", r)
	case <-time.After(d):
	}
}

// startServer runs a Server for the test's lifetime.
func startServer(t *testing.T, opts Options) (*Server, *fakeSink) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	sink := newFakeSink()
	srv.SetSink(sink)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(srv.Dir()); !os.IsNotExist(err) {
			t.Errorf("socket directory left behind: %v", err)
		}
	})
	return srv, sink
}

// exits collects instance exits.
type exits struct {
	c chan lifecycle.ExitStatus
}

func newExits() *exits { return &exits{c: make(chan lifecycle.ExitStatus, 16)} }

func (e *exits) onExit(st lifecycle.ExitStatus) { e.c <- st }

func (e *exits) wait(t *testing.T, d time.Duration) lifecycle.ExitStatus {
	t.Helper()
	select {
	case st := <-e.c:
		return st
	case <-time.After(d):
		t.Fatalf("no exit within %s", d)
		return lifecycle.ExitStatus{}
	}
}

func testExe(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
