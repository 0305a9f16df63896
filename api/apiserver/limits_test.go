package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/api"
)

// serveTestAPI serves a Server without a supervisor on a socket in a
// temporary directory: enough for requests refused before the backend is
// asked.
func serveTestAPI(t *testing.T) (*http.Client, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api.sock")
	l, err := Listen(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Backend{}, Policy{OwnerUID: os.Getuid(), GroupID: -1}, zerolog.Nop())
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}, Timeout: time.Minute}
	return c, path
}

func post(t *testing.T, c *http.Client, path string, body io.Reader) (int, api.Error) {
	t.Helper()
	resp, err := c.Post("http://podsup"+path, "application/json", body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var e api.Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("POST %s: %d with a body that is not an API error: %v", path, resp.StatusCode, err)
	}
	return resp.StatusCode, e
}

// countingReader is an endless body that counts what the server read.
type countingReader struct{ n atomic.Int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	r.n.Add(int64(len(p)))
	return len(p), nil
}

func TestAPIRefusesOversizedAndGarbageBodiesWith4xx(t *testing.T) {
	c, _ := serveTestAPI(t)
	endpoints := []string{"/v1/groups/web/stop", "/v1/groups/web/processes/api/restart", "/v1/shutdown", "/v1/recreates"}
	for _, ep := range endpoints {
		for name, body := range map[string]string{
			"garbage":        "\x00\xff{{{not json",
			"trailing data":  `{} {"grace": "1s"}`,
			"unknown field":  `{"nonsense": 1}`,
			"wrong type":     `{"grace": 10}`,
			"deep nesting":   strings.Repeat("[", 100_000),
			"an array":       `[1, 2, 3]`,
			"truncated":      `{"grace": "1`,
			"oversized text": `{"grace": "` + strings.Repeat("x", 2<<20) + `"}`,
		} {
			code, e := post(t, c, ep, strings.NewReader(body))
			want := http.StatusBadRequest
			if name == "oversized text" {
				want = http.StatusRequestEntityTooLarge
			}
			if code != want || e.Status != code || e.Message == "" {
				t.Errorf("%s with %s: %d %+v, want %d with a message", ep, name, code, e, want)
			}
		}
	}
	// An endless body: refused once the limit is read, not read to the end.
	body := &countingReader{}
	code, e := post(t, c, "/v1/groups/web/stop", io.LimitReader(body, 1<<30))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(e.Message, "larger than the 1048576 bytes") {
		t.Fatalf("an endless body: %d %+v", code, e)
	}
	if n := body.n.Load(); n > 64<<20 {
		t.Errorf("the server read %d bytes of an endless body", n)
	}
}

func TestAPIRefusesASlowBody(t *testing.T) {
	defer func(d time.Duration) { bodyReadTime = d }(bodyReadTime)
	bodyReadTime = 300 * time.Millisecond
	_, path := serveTestAPI(t)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers promise 100 bytes of body; one arrives, then nothing.
	fmt.Fprintf(conn, "POST /v1/groups/web/stop HTTP/1.1\r\nHost: podsup\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "did not arrive within 300ms") {
		t.Fatalf("a stalled body: %d %s", resp.StatusCode, b)
	}
}

func TestAPIRefusesOversizedHeaders(t *testing.T) {
	c, _ := serveTestAPI(t)
	req, _ := http.NewRequest("GET", "http://podsup/v1/version", nil)
	req.Header.Set("X-Filler", strings.Repeat("x", 2*maxHeaderBytes))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a %d-byte header: %d", 2*maxHeaderBytes, resp.StatusCode)
	}
}

// FuzzDecodeBody feeds arbitrary bodies to every request type the API
// decodes: no panic, and every refusal is a 400 or 413 with a message.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"grace": "10s"}`, `{"command": ["sh", "-c", "true"]}`,
		`{"group": "web", "processes": ["a"], "ordered": true, "deadline": "1m"}`, `{"grace": 1}`,
		`{} {}`, `[`, `null`, `{"command": null}`, "\xff"} {
		f.Add([]byte(s))
	}
	targets := []func() any{
		func() any { return &api.ActionRequest{} },
		func() any { return &api.ExecRequest{} },
		func() any { return &api.RecreateRequest{} },
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, target := range targets {
			r := httptest.NewRequest("POST", "/v1/x", bytes.NewReader(body))
			w := httptest.NewRecorder()
			v := target()
			err := decodeBody(w, r, v)
			if err == nil {
				if _, err := json.Marshal(v); err != nil {
					t.Fatalf("a decoded %T does not encode: %v", v, err)
				}
				continue
			}
			if code := statusOf(err); code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge || err.Error() == "" {
				t.Fatalf("%T from %q: %d %v", v, body, code, err)
			}
			if errors.Is(err, api.ErrTooLarge) && len(body) <= maxBodySize {
				t.Fatalf("%d bytes: %v", len(body), err)
			}
		}
	})
}
