package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
)

// Once its first starts are over, podsup up pages its code out and has it
// faulted back a page at a time (memtrim.TrimExecutable: MADV_RANDOM). A
// shutdown runs code the steady state never did, so it first undoes that
// advice (memtrim.ReadyExecutable): with it, a trimmed podsup read its
// shutdown's code back from disk a page at a time, twice the reads.
func TestUpReadiesItsTrimmedCodeWhenStopping(t *testing.T) {
	t.Parallel()
	f := startUp(t, `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "slow" {
  termination_grace_period = "30s"
  process "stays" {
    command = ["sh", "-c", "trap '' TERM; while :; do sleep 1; done"]
  }
}
`)
	f.waitRunning(t, "slow", "stays")
	pid := f.up.p.Pid()
	if !eventually(func() bool { random, all := testproc.RandomReadMappings(pid); return all > 0 && random == all }) {
		random, all := testproc.RandomReadMappings(pid)
		t.Fatalf("podsup never trimmed its code: %d of %d executable mappings advised MADV_RANDOM", random, all)
	}
	if err := f.up.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// "stays" ignores SIGTERM: podsup is stopping for 30 s, time enough to look.
	if !eventually(func() bool { random, all := testproc.RandomReadMappings(pid); return all > 0 && random == 0 }) {
		random, all := testproc.RandomReadMappings(pid)
		t.Fatalf("podsup is stopping with %d of %d executable mappings still advised MADV_RANDOM", random, all)
	}
	// A second SIGTERM a second or more after the first kills what is left.
	time.Sleep(1100 * time.Millisecond)
	if err := f.up.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if e := f.up.wait(t); e.Code() != 0 {
		t.Errorf("podsup up exited with %s after a stop, want 0", e)
	}
}
