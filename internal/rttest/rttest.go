// Package rttest is a supervisor.Runtime for the tests of the layers that
// wrap one (notify.Runtime, systemd.JournalRuntime, podsup up's output
// capture): it records what reaches it, so a test proves that a layer
// passes Spawner, ReleaseGroup and ReleaseProcess on and adds its own
// capability to what it wraps. Tests only.
package rttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/supervisor"
)

// ErrNoStart is what Recorder's Start returns: it starts nothing.
var ErrNoStart = errors.New("rttest.Recorder starts no process")

// Recorder is the innermost runtime of a stack under test. It reports Caps
// and records every call but Start, which fails with ErrNoStart.
type Recorder struct {
	Caps supervisor.Capabilities

	mu    sync.Mutex
	calls []string
}

var _ supervisor.Runtime = (*Recorder)(nil)

func (r *Recorder) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

// RecorderProbeHost is the probe host a Recorder names for every group.
const RecorderProbeHost = "192.0.2.1"

// ProbeHost records the call (supervisor.ProbeHoster).
func (r *Recorder) ProbeHost(group string) string {
	r.record("ProbeHost(%s)", group)
	return RecorderProbeHost
}

// Calls returns the calls so far, in order, as "ReleaseGroup(g)",
// "ReleaseProcess(g/p)", "Spawner(g)", "ProbeHost(g)" and "spawn(g: argv0)" (a command
// started through the spawner Spawner returned).
func (r *Recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Start records nothing and fails: a layer's own start path has tests of
// its own with real processes.
func (r *Recorder) Start(context.Context, supervisor.StartRequest) (supervisor.Instance, error) {
	return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: ErrNoStart}
}

// Spawner returns a spawner that records the command it is given and
// starts nothing.
func (r *Recorder) Spawner(group string) func(*proc.Cmd) (*proc.Process, error) {
	r.record("Spawner(%s)", group)
	return func(c *proc.Cmd) (*proc.Process, error) {
		r.record("spawn(%s: %s)", group, c.Path)
		return nil, ErrNoStart
	}
}

func (r *Recorder) ReleaseGroup(group string) { r.record("ReleaseGroup(%s)", group) }

func (r *Recorder) ReleaseProcess(group, process string) {
	r.record("ReleaseProcess(%s/%s)", group, process)
}

func (r *Recorder) Capabilities() supervisor.Capabilities { return r.Caps }

// CheckForwarding calls Spawner (and the spawner it returns),
// ReleaseProcess and ReleaseGroup on layer, and fails t unless each reached
// rec, the runtime at the bottom of layer, in that order.
func CheckForwarding(t testing.TB, layer supervisor.Runtime, rec *Recorder) {
	t.Helper()
	before := len(rec.Calls())
	if spawn := layer.Spawner("g"); spawn == nil {
		t.Errorf("Spawner(g) returned nil, not the wrapped runtime's spawner")
	} else if _, err := spawn(&proc.Cmd{Path: "/nonexistent/rttest-probe"}); !errors.Is(err, ErrNoStart) {
		t.Errorf("the spawner Spawner(g) returned is not the wrapped runtime's: %v", err)
	}
	layer.ReleaseProcess("g", "p")
	layer.ReleaseGroup("g")
	if host := supervisor.ProbeHostOf(layer, "g"); host != RecorderProbeHost {
		t.Errorf("ProbeHost(g) = %q, not the wrapped runtime's %q", host, RecorderProbeHost)
	}
	got := rec.Calls()[before:]
	want := []string{"Spawner(g)", "spawn(g: /nonexistent/rttest-probe)", "ReleaseProcess(g/p)", "ReleaseGroup(g)", "ProbeHost(g)"}
	if !slices.Equal(got, want) {
		t.Errorf("calls that reached the wrapped runtime: %q, want %q", got, want)
	}
}
