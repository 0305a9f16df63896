package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/api"
)

// blockingLogs follows until the request ends, sending nothing.
type blockingLogs struct{}

func (blockingLogs) Lines(group, process string, q LogQuery) ([]api.LogLine, error) { return nil, nil }
func (blockingLogs) Follow(ctx context.Context, group, process string, q LogQuery) (<-chan api.LogLine, error) {
	ch := make(chan api.LogLine)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

// rawGet sends one GET on a new connection and returns the connection
// and the response's status line and headers, read within a minute.
func rawGet(t *testing.T, path, target string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: podsup\r\n\r\n", target)
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: no answer: %v", target, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, resp
}

func TestFullConnectionsAndFollowersAreAnsweredNotQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api.sock")
	l, err := Listen(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Backend{Logs: blockingLogs{}}, Policy{OwnerUID: os.Getuid(), GroupID: -1}, zerolog.Nop())
	s.limits = newLimiter(Limits{Conns: 6, UntrustedConns: 6, ConnsPerUID: 6, Followers: 3, UntrustedFollowers: 3, FollowersPerUID: 3})
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	defer func() {
		_ = s.Shutdown(context.Background())
		<-done
	}()
	// Three followers: the limit.
	for range 3 {
		if _, resp := rawGet(t, path, "/v1/logs/web/app?follow=true"); resp.StatusCode != http.StatusOK {
			t.Fatalf("a follower: %d", resp.StatusCode)
		}
	}
	// A fourth is refused at once, with a reason; short requests still
	// get through.
	c, resp := rawGet(t, path, "/v1/logs/web/app?follow=true")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "too many open streams (3)") {
		t.Fatalf("a follower over the limit: %d %s", resp.StatusCode, b)
	}
	c.Close()
	// counted waits until the server counts n connections: the refused
	// follower's let go, the idle ones below accepted.
	counted := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			s.limits.mu.Lock()
			got := s.limits.conns
			s.limits.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server counts %d connections, want %d", got, n)
			}
		}
	}
	counted(3)
	start := time.Now()
	if _, resp := rawGet(t, path, "/v1/version"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a short request beside the followers: %d", resp.StatusCode)
	}
	// Connections up to the total (3 followers + 1 version kept open +
	// 2 idle), then one more: answered 503 at once, not left waiting.
	for range 2 {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	counted(6)
	_, resp = rawGet(t, path, "/v1/version")
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "its limit") {
		t.Fatalf("a connection over the total: %d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("answers over the limits took %v", d)
	}
}

func TestLimitsScaleToTheFileLimit(t *testing.T) {
	if l := limitsFor(1 << 20); l != DefaultLimits {
		t.Errorf("a large file limit: %+v", l)
	}
	l := limitsFor(1024)
	if l.Conns != 256 || l.Followers >= l.Conns || l.FollowersPerUID < 1 || l.ConnsPerUID < 2 || l.UntrustedConns >= l.Conns {
		t.Errorf("1024 fds: %+v", l)
	}
	if l := limitsFor(8); l.Conns != 16 || l.Followers < 1 || l.FollowersPerUID < 1 {
		t.Errorf("8 fds: %+v", l)
	}
}
