package probes

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// httpProbeFor builds an http_get handler aimed at srv's port on 127.0.0.1.
func httpProbeFor(t *testing.T, srv *httptest.Server, path string, headers map[string]string, timeout time.Duration) *HTTPGetHandler {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	h, err := NewHTTPGetHandler(spec.HTTPGetAction{Port: n, Path: path, Headers: headers}, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHTTPGetStatuses(t *testing.T) {
	// X6 http_get, kubelet pkg/probe/http: 200–399 Success, others Failure,
	// same-host redirects followed, another host's redirect is a Success
	// with a message.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("redirect to another host was followed: %s", r.URL)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("fine")) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/x", http.StatusFound)
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "secret detail", 500) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	cases := []struct {
		path   string
		want   Result
		msgHas string
		outHas string
	}{
		{"/ok", Success, "", "fine"},
		{"ok", Success, "", "fine"}, // a path without a leading slash gets one
		{"/moved", Success, "", "fine"},
		{"/away", Success, "terminated redirects", ""},
		{"/loop", Failure, "stopped after 10 redirects", ""},
		{"/missing", Failure, "statuscode: 404", ""},
		{"/broken", Failure, "statuscode: 500", "secret detail"},
	}
	for _, c := range cases {
		h := httpProbeFor(t, srv, c.path, nil, 2*time.Second)
		d, err := h.ProbeDetail(context.Background())
		if err != nil {
			t.Errorf("%s: prober error %v", c.path, err)
			continue
		}
		if d.Result != c.want || !strings.Contains(d.Message, c.msgHas) || !strings.Contains(string(d.Output), c.outHas) {
			t.Errorf("%s: got %v %q body %q; want %v, message with %q, body with %q", c.path, d.Result, d.Message, d.Output, c.want, c.msgHas, c.outHas)
		}
		if strings.Contains(d.Message, "secret") {
			t.Errorf("%s: the body leaked into the message %q", c.path, d.Message)
		}
	}
}

func TestHTTPGetHeadersSent(t *testing.T) {
	got := make(chan http.Header, 1)
	var gotHost string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost = r.Host
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	h := httpProbeFor(t, srv, "/", map[string]string{"X-Check": "deep", "Host": "api.example"}, 2*time.Second)
	if r, msg, err := h.Probe(context.Background()); r != Success || err != nil {
		t.Fatalf("got %v %q %v", r, msg, err)
	}
	hdr := <-got
	if hdr.Get("X-Check") != "deep" || hdr.Get("User-Agent") != UserAgent || hdr.Get("Accept") != "*/*" || gotHost != "api.example" {
		t.Fatalf("server saw headers %v host %q", hdr, gotHost)
	}

	// A probe's own User-Agent wins.
	h = httpProbeFor(t, srv, "/", map[string]string{"user-agent": "mine"}, 2*time.Second)
	if _, _, err := h.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ua := (<-got).Get("User-Agent"); ua != "mine" {
		t.Fatalf("User-Agent %q, want mine", ua)
	}
}

func TestHTTPGetBodyCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer srv.Close()
	d, err := httpProbeFor(t, srv, "/", nil, 5*time.Second).ProbeDetail(context.Background())
	if err != nil || d.Result != Success || len(d.Output) != MaxOutput {
		t.Fatalf("got %v, %d bytes, %v; want success with %d bytes", d.Result, len(d.Output), err, MaxOutput)
	}
}

func TestHTTPGetSlowServerTimesOut(t *testing.T) {
	// P10 for http: a probe that exceeds its timeout is a Failure, not an error.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	r, msg, err := httpProbeFor(t, srv, "/", nil, 200*time.Millisecond).Probe(context.Background())
	if r != Failure || err != nil || !strings.Contains(msg, "Timeout") {
		t.Fatalf("got %v %q %v; want failure mentioning the timeout", r, msg, err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("timeout of 200ms took %v", el)
	}
}

func TestHTTPGetConnectionRefused(t *testing.T) {
	port := closedPort(t)
	h, err := NewHTTPGetHandler(spec.HTTPGetAction{Port: port}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r, msg, err := h.Probe(context.Background()); r != Failure || err != nil || !strings.Contains(msg, "refused") {
		t.Fatalf("got %v %q %v; want failure, connection refused", r, msg, err)
	}
}

func TestHTTPGetCancelledIsError(t *testing.T) {
	// P10: a probe cut short by the worker stopping is not the process's
	// failure: it is discarded.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, _, err := httpProbeFor(t, srv, "/", nil, time.Second).Probe(ctx); r != Unknown || err == nil {
		t.Fatalf("got %v %v; want unknown and an error", r, err)
	}
}

func TestHTTPGetBadScheme(t *testing.T) {
	if _, err := NewHTTPGetHandler(spec.HTTPGetAction{Scheme: "gopher", Port: 1}, time.Second); err == nil {
		t.Fatal("scheme gopher accepted")
	}
}

// closedPort returns a 127.0.0.1 port with nothing listening (it was just
// released; reuse by another test in that instant is unlikely).
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

func TestTCPSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	h := NewTCPSocketHandler(spec.TCPSocketAction{Port: l.Addr().(*net.TCPAddr).Port}, time.Second)
	if h.Addr() != l.Addr().String() {
		t.Fatalf("dials %s, want %s (host defaults to 127.0.0.1)", h.Addr(), l.Addr())
	}
	if r, msg, err := h.Probe(context.Background()); r != Success || err != nil {
		t.Fatalf("open port: %v %q %v", r, msg, err)
	}

	closed := NewTCPSocketHandler(spec.TCPSocketAction{Host: "127.0.0.1", Port: closedPort(t)}, time.Second)
	if r, msg, err := closed.Probe(context.Background()); r != Failure || err != nil || !strings.Contains(msg, "refused") {
		t.Fatalf("closed port: %v %q %v; want failure with the dial error", r, msg, err)
	}
}

func TestNewHandlerPicksAction(t *testing.T) {
	if _, err := NewHandler(spec.Probe{}, ExecContext{}); err != ErrNoAction {
		t.Fatalf("no action: %v", err)
	}
	h, err := NewHandler(spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}, ExecContext{})
	if eh, isExec := h.(*ExecHandler); err != nil || !isExec || eh.Runner == nil || eh.Request.Timeout != spec.DefaultProbeTimeout {
		t.Fatalf("exec gave %T %v", h, err)
	}
	h, err = NewHandler(spec.Probe{Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: 9}}}, ExecContext{})
	if _, isTCP := h.(*TCPSocketHandler); err != nil || !isTCP {
		t.Fatalf("tcp_socket gave %T %v", h, err)
	}
	h, err = NewHandler(spec.Probe{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: 9, Path: "/h"}}}, ExecContext{})
	if hh, isHTTP := h.(*HTTPGetHandler); err != nil || !isHTTP || hh.URL() != "http://127.0.0.1:9/h" {
		t.Fatalf("http_get gave %T %v", h, err)
	}
}
