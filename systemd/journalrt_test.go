package systemd

import (
	"testing"

	"github.com/podsup/podsup/internal/rttest"
	"github.com/podsup/podsup/supervisor"
)

// JournalRuntime adds the journal to what Next reports and passes the exec
// seam and the releases on.
func TestJournalRuntimeAddsTheJournalAndPassesTheRestOn(t *testing.T) {
	rec := &rttest.Recorder{Caps: supervisor.Capabilities{Sandboxes: true, OutputCapture: true}}
	rt := &JournalRuntime{Next: rec} // no start here: Send is never used
	want := supervisor.Capabilities{Sandboxes: true, OutputCapture: true, Journal: true}
	if got := rt.Capabilities(); got != want {
		t.Errorf("Capabilities() = %+v, want %+v", got, want)
	}
	rttest.CheckForwarding(t, rt, rec)
}
