package probes

import (
	"context"
	"fmt"

	"github.com/podsup/podsup/internal/execrun"
)

// ExecHandler runs a command: exit 0 is Success, any other exit Failure, and
// a command that outlives its timeout is killed with its whole process tree
// and counts as Failure, not as an error (P10, ExecProbeTimeout=true). A
// command that cannot be started is Unknown with an error.
type ExecHandler struct {
	Runner execrun.Runner
	// Request carries the command, its context and the timeout.
	Request execrun.Request
}

var _ DetailedHandler = (*ExecHandler)(nil)

func (h *ExecHandler) Probe(ctx context.Context) (Result, string, error) {
	d, err := h.ProbeDetail(ctx)
	return d.Result, d.Message, err
}

// ProbeDetail also returns the combined stdout+stderr, capped at MaxOutput.
func (h *ExecHandler) ProbeDetail(ctx context.Context) (Detail, error) {
	res, err := h.Runner.Run(ctx, h.Request)
	if err != nil {
		return Detail{Result: Unknown, Output: res.Output}, fmt.Errorf("unable to run probe command %q: %w", h.Request.Argv, err)
	}
	switch {
	case res.TimedOut:
		return Detail{Result: Failure, Message: fmt.Sprintf("command timed out after %s", timeoutText(h.Request.Timeout)), Output: res.Output}, nil
	case res.ExitCode != 0:
		return Detail{Result: Failure, Message: fmt.Sprintf("command exited with code %d", res.ExitCode), Output: res.Output}, nil
	default:
		return Detail{Result: Success, Output: res.Output}, nil
	}
}
