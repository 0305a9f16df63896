package logs

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

func TestARunningProcessCostsOneFDAndNoneOnceItsOutputEnded(t *testing.T) {
	// Not parallel: it counts the process's open fds, which belong to the whole test process.
	// podsup keeps only the read end of an instance's one pipe while it
	// runs (two with separate_streams), and nothing once its output ended:
	// restarts and removed processes leave no fd behind.
	h := newTestHub(t, HubOptions{Dir: t.TempDir()})
	warm, a := startSh(t, h, "g", "warm", "1", spec.Log{}, `echo warm`)
	waitDone(t, a)
	<-warm.Done()
	fds := openFDs(t)
	for _, c := range []struct {
		log  spec.Log
		want int
	}{{spec.Log{}, 1}, {spec.Log{SeparateStreams: true}, 2}} {
		w := startEchoerLog(t, h, "g", "p", "1", c.log)
		// -1: the test's write end to the echoer's stdin. A running
		// process holds no pidfd (package proc opens one per signal).
		if n := openFDs(t) - 1 - fds; n != c.want {
			t.Fatalf("separate_streams=%v: a running captured process holds %d fds, want %d", c.log.SeparateStreams, n, c.want)
		}
		_ = w.Close() // the echoer exits
		eventually(t, "the exited instance's fds closed", func() bool { return openFDs(t) == fds })
	}
	// 100 instances, each with its own lines and --previous, leave no fd.
	for i := 1; i <= 100; i++ {
		id := strconv.Itoa(i)
		p, a := startSh(t, h, "web", "api", id, spec.Log{}, `echo out-`+id+`; echo err-`+id+` >&2; printf tail-`+id)
		waitDone(t, a)
		<-p.Done() // its pidfd is closed then
		if i == 1 {
			fds = openFDs(t) // the log file of web/api was opened and closed again
			continue
		}
		if n := openFDs(t); n != fds {
			t.Fatalf("instance %d: %d fds open, %d after the first instance", i, n, fds)
		}
		prev := mustTail(t, h, "web", "api", 0, true)
		want := []string{"out-" + strconv.Itoa(i-1), "err-" + strconv.Itoa(i-1), "tail-" + strconv.Itoa(i-1)}
		for _, l := range prev {
			if l.Instance != strconv.Itoa(i-1) {
				t.Fatalf("instance %d: --previous line %+v has the wrong instance", i, l)
			}
		}
		if !equalStrings(texts(prev), want) {
			t.Fatalf("instance %d: --previous is %q, want %q", i, texts(prev), want)
		}
	}
}

func TestALateLineOfThePreviousInstanceStaysItsOwn(t *testing.T) {
	t.Parallel()
	// A child the first instance left writes after the second instance
	// started: the line is the first instance's (--previous), not the
	// current one's.
	h := newTestHub(t, HubOptions{})
	p, a := startSh(t, h, "g", "p", "1", spec.Log{}, `(sleep 0.3; echo late) & echo early`)
	<-p.Done()
	_, b := startSh(t, h, "g", "p", "2", spec.Log{}, `echo second`)
	waitDone(t, b)
	waitEnded(t, a) // the child has written and exited
	if got := texts(mustTail(t, h, "g", "p", 0, true)); !equalStrings(got, []string{"early", "late"}) {
		t.Fatalf("--previous: %q", got)
	}
	if got := texts(mustTail(t, h, "g", "p", 0, false)); !equalStrings(got, []string{"second"}) {
		t.Fatalf("current: %q", got)
	}
}

func TestForgetEndsFollowersAndTheOutputStillDrains(t *testing.T) {
	// Not parallel: it counts the process's open fds, which belong to the whole test process.
	var out syncBuffer
	h := newTestHub(t, HubOptions{Out: &out})
	warm, a := startSh(t, h, "g", "warm", "1", spec.Log{}, `true`)
	waitDone(t, a)
	<-warm.Done()
	fds := openFDs(t)
	// Forgotten while a child it left still writes: the line is read and
	// reaches Out, then the pipe is closed.
	p, a := startSh(t, h, "g", "p", "1", spec.Log{}, `(sleep 0.3; echo after-forget) & echo before`)
	ch, err := h.Follow(context.Background(), "g", "p", -1)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	h.Forget("g", "p")
	for range ch { // ends
	}
	if _, err := h.Tail("g", "p", 0, false); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("tail of a forgotten process: %v", err)
	}
	waitEnded(t, a)
	eventually(t, "the late line on Out", func() bool { return strings.Contains(out.String(), "after-forget") })
	eventually(t, "the forgotten process's pipe closed", func() bool { return openFDs(t) == fds })
}

func TestLogModeChangesBetweenInstances(t *testing.T) {
	t.Parallel()
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
