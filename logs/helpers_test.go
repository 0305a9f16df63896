package logs

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// newTestHub makes a hub that is closed when the test ends.
func newTestHub(t testing.TB, opts HubOptions) *Hub {
	t.Helper()
	h, err := NewHub(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// startSh runs script under /bin/sh -c with its output attached to h as
// group/process instance inst, the way the supervisor will.
func startSh(t testing.TB, h *Hub, group, process, inst string, l spec.Log, script string) (*proc.Process, *Attachment) {
	t.Helper()
	return startCmd(t, h, group, process, inst, l, &proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script}})
}

func startCmd(t testing.TB, h *Hub, group, process, inst string, l spec.Log, c *proc.Cmd) (*proc.Process, *Attachment) {
	t.Helper()
	a, err := h.Attach(group, process, inst, l)
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = a.Stdout(), a.Stderr()
	p, err := proc.Start(c)
	if cerr := a.CloseWriters(); cerr != nil {
		t.Error(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	processOf.Store(a, p)
	t.Cleanup(func() { processOf.Delete(a) })
	t.Cleanup(func() {
		select {
		case <-p.Done():
		default:
			_ = p.KillTree(syscall.SIGKILL) // ours, by process group; it may just have exited
			<-p.Done()
		}
	})
	return p, a
}

// processOf maps the attachments startCmd made to their processes.
var processOf sync.Map // *Attachment -> *proc.Process

// waitDone waits for the process of a (started by startCmd) to exit and its
// output to end: afterwards its whole output is in the tail, files and
// Out's buffer.
func waitDone(t testing.TB, a *Attachment) {
	t.Helper()
	v, ok := processOf.Load(a)
	if !ok {
		t.Fatal("waitDone of an attachment startCmd did not make")
	}
	select {
	case <-v.(*proc.Process).Done():
	case <-time.After(20 * time.Second):
		t.Fatal("process did not exit within 20s")
	}
	waitEnded(t, a)
}

// waitEnded waits for an attachment to end (Done).
func waitEnded(t testing.TB, a *Attachment) {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("attachment did not end within 20s")
	}
}

// eventually polls cond for up to 10 s; integration tests only.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func texts(lines []Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Text)
	}
	return out
}

func mustTail(t testing.TB, h *Hub, group, process string, n int, previous bool) []Line {
	t.Helper()
	lines, err := h.Tail(group, process, n, previous)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// syncBuffer is an io.Writer safe for the sink's writer and a test reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openFDs counts this process's open fds.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}
