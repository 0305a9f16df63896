package main

import (
	"os"
	"strings"
	"testing"
)

const journalConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  process "api" {
    command = ["sleep", "100003"]
    log {
      journal = true
    }
  }
  process "worker" {
    command = ["sleep", "100004"]
    log {
      journal = true
    }
  }
}
`

// TestJournalWithoutJournaldIsSaid: journal = true where podsup's lines
// cannot reach journald is said, not silently dropped: podsup up says so
// in one line at start-up when its stderr is not the journal (here a
// pipe), and validate warns on a host without journald.
func TestJournalWithoutJournaldIsSaid(t *testing.T) {
	t.Parallel()
	f := startUp(t, journalConfig)
	f.waitRunning(t, "web", "api")
	out := f.up.sofar(t)
	if n := strings.Count(out, "sends nothing to journald"); n != 1 || !strings.Contains(out, "web/api and 1 more") || !strings.Contains(out, "StandardError=journal") {
		t.Errorf("podsup up with journal = true, stderr not the journal: %d warnings, want one naming web/api and the fix:\n%s", n, out)
	}
	code, vout := runPodsup(t, "validate", "-f", f.cfg)
	_, err := os.Stat("/run/systemd/journal/socket")
	switch {
	case code != 0:
		t.Errorf("validate: %d\n%s", code, vout)
	case err != nil && !strings.Contains(vout, "no journald"):
		t.Errorf("validate on a host without journald says nothing of journal = true:\n%s", vout)
	case err == nil && strings.Contains(vout, "no journald"):
		t.Errorf("validate on a host with journald warns of it:\n%s", vout)
	}
}
