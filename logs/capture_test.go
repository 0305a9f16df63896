package logs

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

func TestStdoutAndStderrShareOnePipeInOrderByDefault(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `for i in 1 2 3; do echo out-$i; echo err-$i >&2; done`)
	if a.Stdout() != a.Stderr() {
		t.Fatal("stdout and stderr are two pipes without separate_streams")
	}
	waitDone(t, a)
	var got []string
	for _, l := range mustTail(t, h, "web", "api", 0, false) {
		got = append(got, l.Stream.String()+":"+l.Text)
	}
	want := []string{"stdout:out-1", "stdout:err-1", "stdout:out-2", "stdout:err-2", "stdout:out-3", "stdout:err-3"}
	if !equalStrings(got, want) {
		t.Fatalf("got %q, want %q (one pipe: the order written, all as stdout)", got, want)
	}
}

func TestSeparateStreamsAreDistinguished(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{SeparateStreams: true}, `echo to-out; echo to-err >&2`)
	waitDone(t, a)
	got := map[string]Stream{}
	for _, l := range mustTail(t, h, "web", "api", 0, false) {
		got[l.Text] = l.Stream
		if l.Group != "web" || l.Process != "api" || l.Instance != "1" || l.Time.IsZero() {
			t.Errorf("line %+v lacks its names or time", l)
		}
	}
	if len(got) != 2 || got["to-out"] != Stdout || got["to-err"] != Stderr {
		t.Fatalf("got %v", got)
	}
}

func TestPartialLinesAreJoinedAndLongLinesSplit(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{MaxLineBytes: 100})
	// Separate writes, with pauses so they arrive as separate reads.
	script := `printf abc; sleep 0.05; printf 'def\n'; ` +
		`printf '%0250d\n' 0; ` +
		`printf no-newline-at-exit`
	_, a := startSh(t, h, "g", "p", "1", spec.Log{}, script)
	waitDone(t, a)
	lines := mustTail(t, h, "g", "p", 0, false)
	var got []string
	for _, l := range lines {
		s := l.Text
		if len(s) > 20 {
			s = "000..." + strconv.Itoa(len(l.Text))
		}
		if l.Partial {
			s += "~"
		}
		got = append(got, s)
	}
	want := []string{"abcdef", "000...100~", "000...100~", "000...50", "no-newline-at-exit"}
	if !equalStrings(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTailAndPreviousAcrossInstances(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{TailLines: 10})
	if _, err := h.Tail("web", "api", 0, false); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("tail of an unknown process: %v", err)
	}
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `for i in $(seq 1 25); do echo one-$i; done`)
	waitDone(t, a)
	if _, err := h.Tail("web", "api", 0, true); !errors.Is(err, ErrNoPrevious) {
		t.Fatalf("--previous with one instance: %v", err)
	}
	if got := texts(mustTail(t, h, "web", "api", 0, false)); len(got) != 10 || got[0] != "one-16" || got[9] != "one-25" {
		t.Fatalf("tail bounded to 10 lines: %q", got)
	}

	_, b := startSh(t, h, "web", "api", "2", spec.Log{}, `echo two-1; echo two-2`)
	waitDone(t, b)
	if got := texts(mustTail(t, h, "web", "api", 1, false)); !equalStrings(got, []string{"two-2"}) {
		t.Fatalf("--tail 1: %q", got)
	}
	prev := mustTail(t, h, "web", "api", 2, true)
	if got := texts(prev); !equalStrings(got, []string{"one-24", "one-25"}) || prev[0].Instance != "1" {
		t.Fatalf("--previous --tail 2: %+v", prev)
	}

	// A third instance makes the second one the previous.
	_, c := startSh(t, h, "web", "api", "3", spec.Log{}, `true`)
	waitDone(t, c)
	if got := texts(mustTail(t, h, "web", "api", 0, true)); !equalStrings(got, []string{"two-1", "two-2"}) {
		t.Fatalf("--previous after a third instance: %q", got)
	}
	if got := mustTail(t, h, "web", "api", 0, false); len(got) != 0 {
		t.Fatalf("a silent instance has lines: %+v", got)
	}

	h.Forget("web", "api")
	if _, err := h.Tail("web", "api", 0, false); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("tail after Forget: %v", err)
	}
}

// echoer is a process that echoes every line written to its stdin, so a
// test decides when it writes.
func startEchoer(t *testing.T, h *Hub, group, process, inst string) *os.File {
	t.Helper()
	return startEchoerLog(t, h, group, process, inst, spec.Log{})
}

func startEchoerLog(t *testing.T, h *Hub, group, process, inst string, l spec.Log) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	startCmd(t, h, group, process, inst, l, &proc.Cmd{
		Path: "/bin/sh", Args: []string{"sh", "-c", `while read -r l; do echo "$l"; done`}, Stdin: r,
	})
	_ = r.Close() // the child has its copy
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func receive(t *testing.T, ch <-chan Line) Line {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("follow channel closed early")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	return Line{}
}

func TestFollowReceivesNewLinesAcrossInstancesAndEndsOnCancel(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{})
	in := startEchoer(t, h, "web", "api", "1")
	if _, err := in.WriteString("before\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first line in the tail", func() bool { return len(mustTail(t, h, "web", "api", 0, false)) == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := h.Follow(ctx, "web", "api", 5)
	if err != nil {
		t.Fatal(err)
	}
	if l := receive(t, ch); l.Text != "before" {
		t.Fatalf("backlog line %+v", l)
	}
	if _, err := in.WriteString("after\n"); err != nil {
		t.Fatal(err)
	}
	if l := receive(t, ch); l.Text != "after" || l.Instance != "1" {
		t.Fatalf("followed line %+v", l)
	}
	// A restart: the follower sees the new instance too.
	in2 := startEchoer(t, h, "web", "api", "2")
	if _, err := in2.WriteString("second instance\n"); err != nil {
		t.Fatal(err)
	}
	if l := receive(t, ch); l.Text != "second instance" || l.Instance != "2" {
		t.Fatalf("followed line of the next instance %+v", l)
	}

	cancel()
	select {
	case _, ok := <-ch:
		for ok {
			_, ok = <-ch
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow channel not closed after cancel")
	}
}

func TestFollowEndsOnForget(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{})
	startEchoer(t, h, "web", "api", "1")
	ch, err := h.Follow(context.Background(), "web", "api", 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Forget("web", "api")
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a line from nowhere")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow channel not closed after Forget")
	}
}

func TestPassthroughGivesTheProcessPodsupsOwnFiles(t *testing.T) {
	t.Parallel()
	h0 := newTestHub(t, HubOptions{})
	a0, err := h0.Attach("g", "p", "1", spec.Log{Mode: "passthrough"})
	if err != nil {
		t.Fatal(err)
	}
	if a0.Stdout() != os.Stdout || a0.Stderr() != os.Stderr || !a0.Passthrough() {
		t.Fatal("passthrough does not hand out os.Stdout and os.Stderr by default")
	}
	if err := a0.CloseWriters(); err != nil || a0.Stdout() != os.Stdout {
		t.Fatal("CloseWriters closed podsup's own stdout")
	}

	// With stand-ins for podsup's stdout/stderr, check the bytes go there
	// untouched and that nothing is captured.
	dir := t.TempDir()
	out, err := os.Create(dir + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(dir + "/err")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	h := newTestHub(t, HubOptions{Stdout: out, Stderr: errf})
	p, a := startSh(t, h, "g", "p", "1", spec.Log{Mode: "passthrough"}, `echo hi; echo oops >&2`)
	waitDone(t, a)
	<-p.Done()
	if b, _ := os.ReadFile(dir + "/out"); string(b) != "hi\n" {
		t.Fatalf("stdout file has %q", b)
	}
	if b, _ := os.ReadFile(dir + "/err"); string(b) != "oops\n" {
		t.Fatalf("stderr file has %q", b)
	}
	if _, err := h.Tail("g", "p", 0, false); !errors.Is(err, ErrNotCaptured) {
		t.Fatalf("tail of a passthrough process: %v", err)
	}
}

func TestLinesAreStampedByTheInjectedClock(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(clock.Epoch)
	fake.Advance(90 * time.Minute)
	h := newTestHub(t, HubOptions{Clock: fake})
	_, a := startSh(t, h, "g", "p", "1", spec.Log{}, `echo stamped`)
	waitDone(t, a)
	lines := mustTail(t, h, "g", "p", 0, false)
	if len(lines) != 1 || !lines[0].Time.Equal(fake.Now()) {
		t.Fatalf("lines %+v; want the fake clock's %v", lines, fake.Now())
	}
}

// ForgetGroup forgets every process of its group and no other: followers
// of its processes end, and a process of another group, even one whose
// name starts the same, is still known.
func TestForgetGroupForgetsItsOwnProcessesOnly(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{})
	startEchoer(t, h, "web", "api", "1")
	startEchoer(t, h, "web", "db", "1")
	startEchoer(t, h, "web2", "api", "1")
	var chans []<-chan Line
	for _, p := range []string{"api", "db"} {
		ch, err := h.Follow(context.Background(), "web", p, 0)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	h.ForgetGroup("web")
	for i, ch := range chans {
		for open := true; open; {
			select {
			case _, open = <-ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("follower %d of group web not ended by ForgetGroup", i)
			}
		}
	}
	for _, p := range []string{"api", "db"} {
		if _, err := h.Follow(context.Background(), "web", p, 0); !errors.Is(err, ErrUnknownProcess) {
			t.Errorf("web/%s after ForgetGroup: %v, want ErrUnknownProcess", p, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := h.Follow(ctx, "web2", "api", 0); err != nil {
		t.Errorf("web2/api after ForgetGroup(web): %v", err)
	}
}
