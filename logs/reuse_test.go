package logs

import (
	"os"
	"strconv"
	"testing"

	"github.com/podsup/podsup/spec"
)

func TestRestartsReuseThePipesAndKeepEachInstancesLines(t *testing.T) {
	// A restarted process gets the same capture pipes: no fd is made per
	// instance, and each instance's lines land in its own tail even though
	// the next one attaches right after the exit, before the loop may have
	// read them (Attach reads them first).
	h := newTestHub(t, HubOptions{Dir: t.TempDir()})
	var fds int
	var first *Attachment
	for i := 1; i <= 100; i++ {
		id := strconv.Itoa(i)
		p, a := startSh(t, h, "web", "api", id, spec.Log{}, `echo out-`+id+`; echo err-`+id+` >&2; printf tail-`+id)
		if i == 1 {
			waitDone(t, a) // the log file is open from its first line on
			first, fds = a, openFDs(t)
			continue
		}
		<-p.Done() // its pidfd is closed then
		if n := openFDs(t); n != fds {
			t.Fatalf("instance %d: %d fds open, %d after the first instance", i, n, fds)
		}
		if a.Stdout() != first.Stdout() || a.Stderr() != first.Stderr() {
			t.Fatalf("instance %d got new pipes", i)
		}
		prev := mustTail(t, h, "web", "api", 0, true)
		want := []string{"out-" + strconv.Itoa(i-1), "err-" + strconv.Itoa(i-1), "tail-" + strconv.Itoa(i-1)}
		got := map[string]bool{}
		for _, l := range prev {
			got[l.Text] = true
			if l.Instance != strconv.Itoa(i-1) {
				t.Fatalf("instance %d: --previous line %+v has the wrong instance", i, l)
			}
		}
		if len(prev) != 3 || !got[want[0]] || !got[want[1]] || !got[want[2]] {
			t.Fatalf("instance %d: --previous is %q, want %q", i, texts(prev), want)
		}
	}
}

func TestForgetClosesTheKeptPipes(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	warm, a := startSh(t, h, "g", "warm", "1", spec.Log{}, `true`)
	waitDone(t, a)
	<-warm.Done()
	fds := openFDs(t)
	_, a = startSh(t, h, "g", "p", "1", spec.Log{}, `echo hi`)
	waitDone(t, a)
	if n := openFDs(t); n != fds+4 {
		t.Fatalf("a captured process holds %d fds, want 4 (two pipes)", n-fds)
	}
	h.Forget("g", "p")
	waitEnded(t, a)
	eventually(t, "the forgotten process's pipes closed", func() bool { return openFDs(t) == fds })
}

func TestLogModeChangesBetweenInstances(t *testing.T) {
	h := newTestHub(t, HubOptions{Stdout: discardFile(t), Stderr: discardFile(t)})
	_, a := startSh(t, h, "g", "p", "1", spec.Log{}, `echo one`)
	waitDone(t, a)
	_, b := startSh(t, h, "g", "p", "2", spec.Log{Mode: "passthrough"}, `echo two`)
	waitEnded(t, a)
	waitDone(t, b)
	if _, err := h.Tail("g", "p", 0, false); err == nil {
		t.Fatal("a passthrough process has a tail")
	}
	_, c := startSh(t, h, "g", "p", "3", spec.Log{}, `echo three`)
	waitDone(t, c)
	if got := texts(mustTail(t, h, "g", "p", 0, false)); !equalStrings(got, []string{"three"}) {
		t.Fatalf("captured again after passthrough: %q", got)
	}
}

// discardFile is /dev/null, closed when the test ends.
func discardFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}
