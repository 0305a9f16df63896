package probes

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// healthServer serves grpc.health.v1.Health/Check over HTTP/2 without
// TLS, as a gRPC server does: statuses maps a service name to the
// ServingStatus it replies; a name it lacks gets gRPC's NotFound, as
// grpc-go's health server answers.
func healthServer(t *testing.T, statuses map[string]uint64) int {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/grpc.health.v1.Health/Check", func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 || r.Header.Get("Content-Type") != "application/grpc" || r.Header.Get("TE") != "trailers" {
			http.Error(w, "not a gRPC request", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		service := ""
		if len(body) > 5 && body[5] == 1<<3|2 {
			n, k := binary.Uvarint(body[6:])
			service = string(body[6+k : 6+k+int(n)])
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		status, ok := statuses[service]
		if !ok {
			w.Header().Set("Grpc-Status", "5") // trailers-only
			w.Header().Set("Grpc-Message", "unknown service")
			w.WriteHeader(http.StatusOK)
			return
		}
		// An unknown field first: a reader must skip it.
		msg := []byte{2<<3 | 2, 1, 'x', 1 << 3, byte(status)}
		frame := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		_, _ = w.Write(append(frame, msg...))
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set("Grpc-Message", "")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", grpcUnimplemented)
		w.Header().Set("Grpc-Message", "unknown service "+r.URL.Path)
	})
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// The grpc action is Kubernetes': SERVING is Success, anything else a
// Failure that says why (issue 31, item 8).
func TestGRPCProbe(t *testing.T) {
	t.Parallel()
	port := healthServer(t, map[string]uint64{"": 1, "db": 2, "cache": 3})
	cases := []struct {
		service string
		want    Result
		msg     string
	}{
		{"", Success, ""},
		{"db", Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"cache", Failure, `service unhealthy (responded with "SERVICE_UNKNOWN")`},
		{"nope", Failure, "rpc error: code = 5 desc = unknown service"},
	}
	for _, c := range cases {
		h, err := NewHandler(spec.Probe{Handler: spec.Handler{GRPC: &spec.GRPCAction{Port: port, Service: c.service}}}, ExecContext{})
		if err != nil {
			t.Fatal(err)
		}
		res, msg, err := h.Probe(context.Background())
		if err != nil || res != c.want || !strings.Contains(msg, c.msg) {
			t.Errorf("service %q: %v %q %v, want %v %q", c.service, res, msg, err, c.want, c.msg)
		}
	}
}

// A server without the health service, a plain HTTP/1.1 server and a
// closed port are all Failures; so is one that does not reply in time.
func TestGRPCProbeFailures(t *testing.T) {
	t.Parallel()
	unimplemented := healthServer(t, nil)
	h := NewGRPCHandler(spec.GRPCAction{Port: unimplemented}, time.Second)
	h.url = strings.Replace(h.url, "grpc.health.v1.Health", "other.Service", 1)
	if res, msg, _ := h.Probe(context.Background()); res != Failure || !strings.Contains(msg, "does not implement the grpc health protocol") {
		t.Errorf("unimplemented: %v %q", res, msg)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := &http.Server{Handler: http.NotFoundHandler()}
	go func() { _ = plain.Serve(l) }()
	t.Cleanup(func() { _ = plain.Close() })
	h = NewGRPCHandler(spec.GRPCAction{Port: l.Addr().(*net.TCPAddr).Port}, time.Second)
	if res, msg, _ := h.Probe(context.Background()); res != Failure || msg == "" {
		t.Errorf("an HTTP/1.1 server: %v %q", res, msg)
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	h = NewGRPCHandler(spec.GRPCAction{Port: silent.Addr().(*net.TCPAddr).Port}, 200*time.Millisecond)
	start := time.Now()
	if res, _, _ := h.Probe(context.Background()); res != Failure || time.Since(start) > 5*time.Second {
		t.Errorf("a server that never answers: %v after %s", res, time.Since(start))
	}
	port := silent.Addr().(*net.TCPAddr).Port
	_ = silent.Close()
	h = NewGRPCHandler(spec.GRPCAction{Port: port}, time.Second)
	if res, msg, _ := h.Probe(context.Background()); res != Failure || !strings.Contains(msg, "failed to connect") {
		t.Errorf("a closed port: %v %q", res, msg)
	}
}
