package stack

import (
	"context"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/internal/rttest"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/notify"
	"github.com/podsup/podsup/supervisor"
)

// testHub is an output hub that writes nowhere, closed with the test.
func testHub(t *testing.T) *logs.Hub {
	t.Helper()
	hub, err := logs.NewHub(logs.HubOptions{Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Close() })
	return hub
}

// testNotifyServer is a running notify server, stopped with the test.
func testNotifyServer(t *testing.T) *notify.Server {
	t.Helper()
	srv, err := notify.NewServer(notify.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return srv
}

// The runtime podsup up supervises with has every capability there is
// (the journal when podsup runs under journald), so the supervisor refuses
// nothing podsup up accepted before runtimes reported capabilities: no
// example, whether or not under journald.
func TestUpRuntimeStackHasEveryCapability(t *testing.T) {
	hub, srv := testHub(t), testNotifyServer(t)
	// Only Capabilities is called: no sandbox is made, so the SandboxRuntime
	// needs no package sandbox runtime under it.
	local := NewSandboxRuntime(nil, true)

	underJournal := layers(local, hub, true, srv, nil).Capabilities()
	v := reflect.ValueOf(underJournal)
	for i := range v.NumField() {
		// The string fields say what the host keeps back (hostcheck.go):
		// nothing, as root, in CI.
		if f := v.Field(i); f.Kind() == reflect.Bool && !f.Bool() || f.Kind() == reflect.String && f.String() != "" && v.Type().Field(i).Name != "ActivationSockets" {
			t.Errorf("the stack under journald lacks %s: %+v", v.Type().Field(i).Name, underJournal)
		}
	}
	elsewhere := layers(local, hub, false, srv, nil).Capabilities()
	want := underJournal
	want.Journal = false // journal = true falls back to capture
	if elsewhere != want {
		t.Errorf("the stack outside journald: %+v, want %+v", elsewhere, want)
	}

	files, _ := filepath.Glob(filepath.Join("..", "examples", "*.hcl"))
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4", len(files))
	}
	for _, f := range files {
		cfg, err := config.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// Run as their headers say: systemd.hcl socket-activated, with
		// the socket "web" passed.
		activated := elsewhere
		activated.ActivationSockets = "web"
		if err := activated.Check(cfg); err != nil {
			t.Errorf("%s is refused by the stack: %v", f, err)
		}
	}
}

// The capture layer adds output capture to what it wraps and passes the
// exec seam and the releases on.
func TestCapturingRuntimeAddsCaptureAndPassesTheRestOn(t *testing.T) {
	rec := &rttest.Recorder{Caps: supervisor.Capabilities{Sandboxes: true}}
	rt := newCapturingRuntime(rec, testHub(t))
	if got, want := rt.Capabilities(), (supervisor.Capabilities{Sandboxes: true, OutputCapture: true}); got != want {
		t.Errorf("Capabilities() = %+v, want %+v", got, want)
	}
	rttest.CheckForwarding(t, rt, rec)
}
