package logs

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// A start retried when podsup ran out of fds (package stack) withdraws its
// first attachment: the current and previous instances are those before
// it, and its write ends are closed.
func TestWithdrawPutsBackTheInstancesBefore(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{TailLines: 10})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `echo one`)
	waitDone(t, a)
	_, b := startSh(t, h, "web", "api", "2", spec.Log{}, `echo two`)
	waitDone(t, b)
	c, err := h.Attach("web", "api", "3", spec.Log{})
	if err != nil {
		t.Fatal(err)
	}
	c.Withdraw()
	waitEnded(t, c) // its write ends are closed: its output ended
	if got := texts(mustTail(t, h, "web", "api", 0, false)); !equalStrings(got, []string{"two"}) {
		t.Fatalf("current instance after a withdrawn attachment: %q, want [two]", got)
	}
	if got := texts(mustTail(t, h, "web", "api", 0, true)); !equalStrings(got, []string{"one"}) {
		t.Fatalf("--previous after a withdrawn attachment: %q, want [one]", got)
	}
}

// An instance whose start went through (CloseWriters) keeps no instance
// before it alive: a crash loop's instances are freed as they age out of
// current and previous.
func TestOldInstancesAreFreed(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{TailLines: 10})
	freed := make(chan struct{})
	attach := func(id string) *Attachment {
		a, err := h.Attach("web", "api", id, spec.Log{})
		if err != nil {
			t.Fatal(err)
		}
		_ = a.CloseWriters()
		waitEnded(t, a)
		return a
	}
	first := attach("1")
	runtime.AddCleanup(first, func(ch chan struct{}) { close(ch) }, freed)
	first = nil
	for i := 2; i <= 5; i++ {
		attach(strconv.Itoa(i))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("instance 1 is still reachable after four newer ones: something chains the instances")
		}
	}
}

// A withdrawn attachment gives back the lines of its pre_start: the
// retried Attach of the same instance shows them, and --previous is still
// the instance before.
func TestWithdrawKeepsThePreStartLines(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{TailLines: 10})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `echo one`)
	waitDone(t, a)
	h.AppendHook("web", "api", "2", spec.Log{}, spec.PreStart, []byte("preparing\n"))
	b, err := h.Attach("web", "api", "2", spec.Log{})
	if err != nil {
		t.Fatal(err)
	}
	b.Withdraw()
	waitEnded(t, b)
	_, c := startSh(t, h, "web", "api", "2", spec.Log{}, `echo two`)
	waitDone(t, c)
	if got := texts(mustTail(t, h, "web", "api", 0, false)); !equalStrings(got, []string{"preparing", "two"}) {
		t.Fatalf("retried instance: %q, want [preparing two]", got)
	}
	if got := texts(mustTail(t, h, "web", "api", 0, true)); !equalStrings(got, []string{"one"}) {
		t.Fatalf("--previous after a withdrawn attachment: %q, want [one]", got)
	}
}

// A withdrawn attachment gives back its read ends before Withdraw
// returns, not when the loop next comes round to their end of output:
// the start's retry that follows at once, alone because fds ran out,
// needs them.
func TestWithdrawClosesTheReadEndsAtOnce(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, HubOptions{TailLines: 10})
	openPipes := func(fds []int) (open []int) {
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && strings.HasPrefix(target, "pipe:") {
				open = append(open, fd)
			}
		}
		return open
	}
	for _, l := range []spec.Log{{}, {SeparateStreams: true}} {
		a, err := h.Attach("web", "api", "1", l)
		if err != nil {
			t.Fatal(err)
		}
		var reads []int
		for i := range a.c.streams[:a.c.n] {
			reads = append(reads, int(a.c.streams[i].fd))
		}
		// Hold the loop, as a loop busy with other output would be: it
		// cannot retire the read ends meanwhile.
		h.readMu.Lock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Withdraw()
		}()
		select {
		case <-done:
			if open := openPipes(reads); len(open) > 0 {
				t.Errorf("separate streams %v: Withdraw returned with read ends %v still open", l.SeparateStreams, open)
			}
		case <-time.After(50 * time.Millisecond):
		}
		h.readMu.Unlock()
		<-done
		if open := openPipes(reads); len(open) > 0 {
			t.Errorf("separate streams %v: read ends %v still open after Withdraw", l.SeparateStreams, open)
		}
	}
}
