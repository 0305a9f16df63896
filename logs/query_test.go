package logs

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

func TestTailSinceCountsOnlyLinesAtOrAfterIt(t *testing.T) {
	var tl tail
	in := &instance{proc: &procLog{group: "g", process: "p"}, instance: "1"}
	// Times 10..19, with one line stamped back in time (a clock set back)
	// in the middle: it is left out, not taken as the start of a suffix.
	for i := 10; i < 20; i++ {
		when := int64(i)
		if i == 16 {
			when = 3
		}
		tl.add(when, 0, []byte{byte('a' + i - 10)}, 100, 4096)
	}
	for _, c := range []struct {
		n     int
		since int64
		want  string
	}{
		{0, 0, "abcdefghij"},
		{0, 15, "fhij"},
		{2, 15, "ij"},
		{9, 15, "fhij"},
		{0, 100, ""},
		{3, 0, "hij"},
	} {
		got := strings.Join(texts(tl.lines(c.n, c.since, in)), "")
		if got != c.want {
			t.Errorf("lines(%d, since %d) = %q, want %q", c.n, c.since, got, c.want)
		}
	}
}

func TestLinesByInstanceFindCurrentAndPrevious(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `echo first`)
	waitDone(t, a)
	// S5: while the process waits in back-off, its last terminated
	// instance is the current one: asked for by id, it is found.
	got, err := h.Lines("web", "api", Query{Instance: "1"})
	if err != nil || len(got) != 1 || got[0].Text != "first" {
		t.Fatalf("instance 1 while current: %v %v", got, err)
	}
	if _, err := h.Lines("web", "api", Query{Previous: true}); !errors.Is(err, ErrNoPrevious) {
		t.Fatalf("previous of the first instance: %v", err)
	}
	_, b := startSh(t, h, "web", "api", "2", spec.Log{}, `echo second`)
	waitDone(t, b)
	for id, want := range map[string]string{"1": "first", "2": "second"} {
		got, err := h.Lines("web", "api", Query{Instance: id})
		if err != nil || len(got) != 1 || got[0].Text != want || got[0].Instance != id {
			t.Errorf("instance %s: %v %v", id, got, err)
		}
	}
	_, c := startSh(t, h, "web", "api", "3", spec.Log{}, `true`)
	waitDone(t, c)
	if _, err := h.Lines("web", "api", Query{Instance: "1"}); !errors.Is(err, ErrNoPrevious) {
		t.Fatalf("an instance two back is not kept: %v", err)
	}
	since := time.Now().Add(time.Hour)
	if got, err := h.Lines("web", "api", Query{Instance: "2", Since: since}); err != nil || len(got) != 0 {
		t.Fatalf("since an hour ahead: %v %v", got, err)
	}
}

func TestNoStdoutKeepsAProcessOffOutOnly(t *testing.T) {
	var out syncBuffer
	h := newTestHub(t, HubOptions{Out: &out, NoPrefix: true})
	_, a := startSh(t, h, "web", "noisy", "1", spec.Log{NoStdout: true}, `echo chatter`)
	_, b := startSh(t, h, "web", "api", "1", spec.Log{}, `echo hello`)
	waitDone(t, a)
	waitDone(t, b)
	if got := texts(mustTail(t, h, "web", "noisy", 0, false)); !equalStrings(got, []string{"chatter"}) {
		t.Fatalf("the quiet process's tail: %q", got)
	}
	if err := h.Close(); err != nil { // flushes Out
		t.Fatal(err)
	}
	if got := out.String(); got != "hello\n" {
		t.Fatalf("Out without prefixes and without the quiet process: %q", got)
	}
}

func TestPrefixColorsAreOnePerProcess(t *testing.T) {
	var out syncBuffer
	h := newTestHub(t, HubOptions{Out: &out, PrefixColor: func(i int) string { return "<c" + strconv.Itoa(i) + ">" }})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `echo one`)
	waitDone(t, a)
	_, b := startSh(t, h, "web", "db", "1", spec.Log{}, `echo two`)
	waitDone(t, b)
	_, c := startSh(t, h, "web", "api", "2", spec.Log{}, `echo three`) // a new instance keeps its process's colour
	waitDone(t, c)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	want := "<c0>web/api |\x1b[0m one\n<c1>web/db  |\x1b[0m two\n<c0>web/api |\x1b[0m three\n"
	if got := out.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
