package probes

import (
	"errors"
	"fmt"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// MaxOutput caps the output a probe keeps: exec output and HTTP bodies
// (P10: 10 KiB, as kubelet).
const MaxOutput = execrun.MaxOutput

// ExecContext is where an exec probe runs: the probed process's environment,
// directory and user, and the Runner that spawns into its sandbox (X6). A nil
// Runner is execrun.SandboxRunner{}: podsup's own namespaces.
type ExecContext struct {
	Runner execrun.Runner
	proc.RunAs
	// Security is the probed process's: an exec probe runs as narrowed
	// as the process it probes (kubelet runs it in the container).
	Security *proc.Security
}

// ErrNoAction is returned for a spec.Handler without a probe action.
var ErrNoAction = errors.New("probe has no exec, http_get, tcp_socket or grpc action")

// NewHandler builds the Handler for p's action. p's Timeout (D1 default
// applied here when zero) bounds every probe; exec probes run through ec.
func NewHandler(p spec.Probe, ec ExecContext) (Handler, error) {
	timeout := p.WithDefaults().Timeout
	switch {
	case p.Exec != nil:
		runner := ec.Runner
		if runner == nil {
			runner = execrun.SandboxRunner{}
		}
		return &ExecHandler{
			Runner: runner,
			Request: execrun.Request{
				Argv: p.Exec.Command, RunAs: ec.RunAs, Security: ec.Security, Timeout: timeout,
			},
		}, nil
	case p.HTTPGet != nil:
		return NewHTTPGetHandler(*p.HTTPGet, timeout)
	case p.TCPSocket != nil:
		return NewTCPSocketHandler(*p.TCPSocket, timeout), nil
	case p.GRPC != nil:
		return NewGRPCHandler(*p.GRPC, timeout), nil
	default:
		return nil, ErrNoAction
	}
}

// defaultHost is where http_get and tcp_socket probes go without a host:
// podsup's processes share its network namespace. A sandbox on a network
// of its own is probed at its address instead (supervisor.ProbeHoster).
const defaultHost = spec.DefaultHost

func hostOr(h string) string {
	if h == "" {
		return defaultHost
	}
	return h
}

// timeoutText renders a timeout for messages ("1s", "250ms").
func timeoutText(d time.Duration) string { return fmt.Sprint(d) }
