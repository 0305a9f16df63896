package notify

import (
	"testing"

	"github.com/podsup/podsup/internal/rttest"
	"github.com/podsup/podsup/supervisor"
)

// notify.Runtime adds readiness protocols (with a server to receive them)
// and socket activation to what Next reports, and passes the exec seam and
// the releases on, so a group's exec probes still run in its sandbox and
// its sandbox is still deleted.
func TestRuntimeAddsItsCapabilitiesAndPassesTheRestOn(t *testing.T) {
	srv, _ := startServer(t, Options{})
	rec := &rttest.Recorder{Caps: supervisor.Capabilities{Sandboxes: true, OutputCapture: true}}
	rt := &Runtime{Next: rec, Server: srv}
	want := supervisor.Capabilities{Sandboxes: true, OutputCapture: true, ReadinessProtocols: true, SocketActivation: true}
	if got := rt.Capabilities(); got != want {
		t.Errorf("Capabilities() = %+v, want %+v", got, want)
	}
	rttest.CheckForwarding(t, rt, rec)

	// Without a server nothing would receive a readiness message.
	want.ReadinessProtocols = false
	if got := (&Runtime{Next: rec}).Capabilities(); got != want {
		t.Errorf("without a Server: Capabilities() = %+v, want %+v", got, want)
	}
	// No Next is hostrt.Runtime, which has none of its own.
	if got := (&Runtime{Server: srv}).Capabilities(); got != (supervisor.Capabilities{ReadinessProtocols: true, SocketActivation: true}) {
		t.Errorf("over hostrt.Runtime: Capabilities() = %+v, want readiness protocols and socket activation alone", got)
	}
}
