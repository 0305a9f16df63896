package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if !eventually(func() bool { random, all := randomReadMappings(pid); return all > 0 && random == all }) {
		random, all := randomReadMappings(pid)
		t.Fatalf("podsup never trimmed its code: %d of %d executable mappings advised MADV_RANDOM", random, all)
	}
	if err := f.up.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// "stays" ignores SIGTERM: podsup is stopping for 30 s, time enough to look.
	if !eventually(func() bool { random, all := randomReadMappings(pid); return all > 0 && random == 0 }) {
		random, all := randomReadMappings(pid)
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

// randomReadMappings counts the read-only mappings of pid's executable
// that carry MADV_RANDOM (VmFlags "rr" in smaps), and all of them.
func randomReadMappings(pid int) (random, all int) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0, 0
	}
	inExe := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			inExe = f[5] == exe && !strings.Contains(f[1], "w")
			continue
		}
		if inExe && len(f) >= 1 && f[0] == "VmFlags:" {
			all++
			for _, flag := range f[1:] {
				if flag == "rr" {
					random++
				}
			}
		}
	}
	return random, all
}
