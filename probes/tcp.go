package probes

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/podsup/podsup/spec"
)

// TCPSocketHandler opens a TCP connection: connected within the timeout is
// Success, anything else Failure with the dial error as message (kubelet's
// pkg/probe/tcp). The connection is closed at once.
type TCPSocketHandler struct {
	addr   string
	dialer net.Dialer
}

// NewTCPSocketHandler builds a handler for a.
func NewTCPSocketHandler(a spec.TCPSocketAction, timeout time.Duration) *TCPSocketHandler {
	return &TCPSocketHandler{
		addr:   net.JoinHostPort(hostOr(a.Host), strconv.Itoa(a.Port)),
		dialer: net.Dialer{Timeout: timeout},
	}
}

// Addr is the host:port the handler dials.
func (h *TCPSocketHandler) Addr() string { return h.addr }

func (h *TCPSocketHandler) Probe(ctx context.Context) (Result, string, error) {
	conn, err := h.dialer.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		if ctx.Err() != nil {
			return Unknown, "", fmt.Errorf("probe cancelled: %w", ctx.Err())
		}
		return Failure, err.Error(), nil
	}
	_ = conn.Close() // nothing was sent; a close error says nothing about health
	return Success, "", nil
}
