package logs

import (
	"runtime"
	"strconv"
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
