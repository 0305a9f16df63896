// Package probes owns kubelet-style health probes for podsup processes: the
// handlers (exec, http_get, tcp_socket) that check a process once, and the
// Worker that runs one probe kind for one process on its period and turns
// handler outcomes into published results with kubelet's initial delay,
// startup gating, thresholds and hold (docs/semantics.md P1–P10, D1, X6).
//
// It reports; it never kills or restarts anything. The supervisor reacts to
// the Updates a Worker publishes.
package probes

import (
	"context"
	"fmt"
)

// Result is the outcome of one probe, or the value a Worker publishes.
type Result int

const (
	// Unknown is a probe that could not decide (always with an error from a
	// Handler), and the startup probe's initial value (P4).
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Unknown:
		return "unknown"
	case Success:
		return "success"
	case Failure:
		return "failure"
	default:
		return fmt.Sprintf("Result(%d)", int(r))
	}
}

// Handler checks a process once.
//
// The message says why in a short sentence ("" is fine on success). A non-nil
// error means the prober itself broke (the command could not be started, the
// request could not be built): the Worker discards that result and does not
// count it towards a threshold (P10). A check that ran and failed, including
// one that timed out, is Failure with a nil error.
type Handler interface {
	Probe(ctx context.Context) (Result, string, error)
}

// Detail is a probe's full outcome: the result and message of Handler.Probe,
// plus raw output (exec: combined stdout+stderr; http: response body), capped
// at MaxOutput.
type Detail struct {
	Result  Result
	Message string
	Output  []byte
}

// DetailedHandler is a Handler that can also return its raw output. The
// Worker prefers it, so Updates carry the output of the probe that decided.
type DetailedHandler interface {
	Handler
	ProbeDetail(ctx context.Context) (Detail, error)
}

// HandlerFunc adapts a function to Handler (tests, library users).
type HandlerFunc func(ctx context.Context) (Result, string, error)

func (f HandlerFunc) Probe(ctx context.Context) (Result, string, error) { return f(ctx) }

// probeDetail runs h, through ProbeDetail when it has one.
func probeDetail(ctx context.Context, h Handler) (Detail, error) {
	if d, ok := h.(DetailedHandler); ok {
		return d.ProbeDetail(ctx)
	}
	r, msg, err := h.Probe(ctx)
	return Detail{Result: r, Message: msg}, err
}
