package probes

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/podsup/podsup/spec"
)

// GRPCHandler makes one call of the standard health-checking protocol,
// grpc.health.v1.Health/Check, as kubelet's grpc probe does
// (pkg/probe/grpc): a reply of SERVING is Success; any other status, a
// gRPC error or a call that fails or exceeds its timeout is Failure with
// the reason as message.
//
// The call is written by hand over net/http's HTTP/2 without TLS (h2c,
// with prior knowledge, as gRPC does): the request and the reply are
// each one message with one field, and google.golang.org/grpc would add
// several megabytes to podsup for them.
type GRPCHandler struct {
	url     string
	service string
	client  *http.Client
}

// NewGRPCHandler builds a handler for a; timeout bounds the whole call.
func NewGRPCHandler(a spec.GRPCAction, timeout time.Duration) *GRPCHandler {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		Protocols: &protocols,
		// A connection per probe, as kubelet dials one: nothing lingers
		// in the process between probes.
		DisableKeepAlives: true,
		DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(defaultHost, strconv.Itoa(a.Port)), Path: "/grpc.health.v1.Health/Check"}
	return &GRPCHandler{url: u.String(), service: a.Service, client: &http.Client{Transport: tr, Timeout: timeout}}
}

// URL is the method the handler calls.
func (h *GRPCHandler) URL() string { return h.url }

// servingStatus names grpc.health.v1.HealthCheckResponse.ServingStatus's
// values.
var servingStatus = map[uint64]string{0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}

// grpcUnimplemented is gRPC's status code for a method the server does not
// have.
const grpcUnimplemented = "12"

func (h *GRPCHandler) Probe(ctx context.Context) (Result, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(grpcFrame(healthCheckRequest(h.service))))
	if err != nil {
		return Unknown, "", fmt.Errorf("unable to build probe request: %w", err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("User-Agent", UserAgent)
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Unknown, "", fmt.Errorf("probe cancelled: %w", ctx.Err())
		}
		return Failure, fmt.Sprintf("failed to connect service %q: %v", h.url, err), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput))
	if err != nil {
		return Failure, fmt.Sprintf("reading the reply: %v", err), nil
	}
	if resp.StatusCode != http.StatusOK {
		return Failure, fmt.Sprintf("not a gRPC server: HTTP status %d", resp.StatusCode), nil
	}
	// A reply without a message carries its status in the headers
	// ("trailers-only"); otherwise in the trailers, read with the body.
	code, msg := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if code == "" {
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	switch code {
	case "0":
	case grpcUnimplemented:
		return Failure, "this server does not implement the grpc health protocol (grpc.health.v1.Health): " + msg, nil
	case "":
		return Failure, "the reply has no grpc-status", nil
	default:
		return Failure, fmt.Sprintf("rpc error: code = %s desc = %s", code, msg), nil
	}
	status, err := healthCheckStatus(body)
	if err != nil {
		return Failure, "malformed reply: " + err.Error(), nil
	}
	if status != 1 {
		name := servingStatus[status]
		if name == "" {
			name = strconv.FormatUint(status, 10)
		}
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", name), nil
	}
	return Success, "", nil
}

// healthCheckRequest is grpc.health.v1.HealthCheckRequest{service} in
// protobuf's wire format: field 1, a string, left out when empty.
func healthCheckRequest(service string) []byte {
	if service == "" {
		return nil
	}
	b := []byte{1<<3 | 2}
	b = binary.AppendUvarint(b, uint64(len(service)))
	return append(b, service...)
}

// grpcFrame is msg as gRPC sends a message: uncompressed, its length
// first.
func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// healthCheckStatus is the status (field 1, an enum) of the
// HealthCheckResponse framed in body; fields it does not know are
// skipped, as protobuf requires.
func healthCheckStatus(body []byte) (uint64, error) {
	if len(body) < 5 {
		return 0, errors.New("no message")
	}
	if body[0] != 0 {
		return 0, errors.New("a compressed message")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	msg := body[5:]
	if uint64(len(msg)) < uint64(n) {
		return 0, errors.New("a message cut short")
	}
	msg = msg[:n]
	var status uint64
	for len(msg) > 0 {
		key, k := binary.Uvarint(msg)
		if k <= 0 {
			return 0, errors.New("a bad field key")
		}
		msg = msg[k:]
		switch key & 7 {
		case 0: // varint
			v, k := binary.Uvarint(msg)
			if k <= 0 {
				return 0, errors.New("a bad varint")
			}
			msg = msg[k:]
			if key>>3 == 1 {
				status = v
			}
		case 1: // 64-bit
			if len(msg) < 8 {
				return 0, errors.New("a field cut short")
			}
			msg = msg[8:]
		case 2: // length-delimited
			l, k := binary.Uvarint(msg)
			if k <= 0 || uint64(len(msg)-k) < l {
				return 0, errors.New("a field cut short")
			}
			msg = msg[k+int(l):]
		case 5: // 32-bit
			if len(msg) < 4 {
				return 0, errors.New("a field cut short")
			}
			msg = msg[4:]
		default:
			return 0, fmt.Errorf("wire type %d", key&7)
		}
	}
	return status, nil
}
