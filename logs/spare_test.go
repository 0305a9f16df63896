package logs

import (
	"testing"

	"github.com/podsup/podsup/spec"
)

func TestAPreparedPipeIsTakenByTheNextAttachAndClosedByForget(t *testing.T) {
	// Not parallel: it counts the process's open fds, which belong to the whole test process.
	// Prepare makes the next instance's pipe once the current one has
	// started (a process restarted at once, R8): two fds per pipe until
	// the next Attach takes them, which then makes none; Forget closes
	// what was not taken.
	h := newTestHub(t, HubOptions{})
	p, a := startSh(t, h, "g", "p", "1", spec.Log{}, `echo one`)
	waitDone(t, a)
	<-p.Done()
	base := openFDs(t)
	for _, c := range []struct {
		log   spec.Log
		pipes int
	}{{spec.Log{}, 1}, {spec.Log{SeparateStreams: true}, 2}} {
		h.Prepare("g", "p", c.log)
		if n := openFDs(t) - base; n != 2*c.pipes {
			t.Fatalf("separate_streams=%v: Prepare holds %d fds, want %d", c.log.SeparateStreams, n, 2*c.pipes)
		}
		h.Prepare("g", "p", c.log) // ready already: nothing more
		if n := openFDs(t) - base; n != 2*c.pipes {
			t.Fatalf("separate_streams=%v: a second Prepare holds %d fds in all, want %d", c.log.SeparateStreams, n, 2*c.pipes)
		}
		att, err := h.Attach("g", "p", "2", c.log)
		if err != nil {
			t.Fatal(err)
		}
		if n := openFDs(t) - base; n != 2*c.pipes {
			t.Fatalf("separate_streams=%v: Attach after Prepare holds %d fds, want the %d prepared", c.log.SeparateStreams, n, 2*c.pipes)
		}
		// The prepared pipe carries the instance's lines like any.
		if _, err := att.Stdout().WriteString("from the prepared pipe\n"); err != nil {
			t.Fatal(err)
		}
		_ = att.CloseWriters()
		waitEnded(t, att)
		if got := texts(mustTail(t, h, "g", "p", 0, false)); !equalStrings(got, []string{"from the prepared pipe"}) {
			t.Fatalf("separate_streams=%v: current tail %q", c.log.SeparateStreams, got)
		}
		eventually(t, "the ended instance's fds closed", func() bool { return openFDs(t) == base })
	}
	h.Prepare("g", "p", spec.Log{SeparateStreams: true})
	// A spare of the wrong count (separate_streams changed by a reload) is
	// closed by the Attach, which makes its own.
	att, err := h.Attach("g", "p", "3", spec.Log{})
	if err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t) - base; n != 2 {
		t.Fatalf("Attach with a spare of two pipes for one: %d fds, want its own pipe's 2", n)
	}
	_ = att.CloseWriters()
	waitEnded(t, att)
	h.Prepare("g", "p", spec.Log{})
	h.Forget("g", "p")
	eventually(t, "Forget closed the spare", func() bool { return openFDs(t) == base })
	h.Prepare("g", "nonesuch", spec.Log{})
	h.Prepare("g", "p", spec.Log{Mode: "passthrough"})
	if n := openFDs(t) - base; n != 0 {
		t.Fatalf("Prepare of an unknown process or passthrough holds %d fds, want 0", n)
	}
}
