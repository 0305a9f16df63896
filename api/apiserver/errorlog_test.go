package apiserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// Out of fds, net/http logs a failed accept every few milliseconds: podsup
// says it once, naming its limit and the fix; other errors go to its log
// as they are.
func TestHTTPErrorLogNamesTheFDLimitOnce(t *testing.T) {
	var buf bytes.Buffer
	l := newHTTPErrorLog(zerolog.New(&buf))
	for range 50 {
		l.Printf("http: Accept error: accept unix /run/podsup/podsup.sock: accept4: too many open files; retrying in 5ms")
	}
	l.Printf("http: panic serving @: boom")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want the fd refusal once and the panic:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "too many open files: podsup's limit is ") || !strings.Contains(lines[0], "(RLIMIT_NOFILE)") || !strings.Contains(lines[0], `"level":"warn"`) {
		t.Errorf("the fd refusal: %s", lines[0])
	}
	if !strings.Contains(lines[1], "boom") {
		t.Errorf("the other error: %s", lines[1])
	}
}
