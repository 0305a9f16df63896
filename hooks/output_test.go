package hooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// A failed exec hook's message carries what it printed, as the kubelet's
// FailedPostStartHook event does ("... failed - error: %v, message: %q"),
// quoted so that no byte a terminal acts on survives, and cut at
// MaxMessageOutput; the Outcome keeps MaxOutput of it and says the rest
// was not kept.
func TestFailedExecHookMessageQuotesItsBoundedOutput(t *testing.T) {
	out := Run(context.Background(), execHook("sh", "-c", `printf 'boom\033[2J\r\n'; exit 3`), spec.PostStart, 0)
	var ee *ExitError
	var oe *OutputError
	if !errors.As(out.Err, &ee) || ee.Code != 3 || !errors.As(out.Err, &oe) {
		t.Fatalf("want an *ExitError in an *OutputError: %#v", out.Err)
	}
	want := `post_start hook: hook command exited with code 3, message: "boom\x1b[2J\r\n"`
	if got := out.Err.Error(); got != want {
		t.Fatalf("message:\n got %s\nwant %s", got, want)
	}

	// 20 KiB of output: MaxOutput is kept, 1 KiB is quoted.
	out = Run(context.Background(), execHook("sh", "-c", `head -c 20480 /dev/zero | tr '\0' x; exit 1`), spec.PreStop, 0)
	if len(out.Output) != MaxOutput || !out.Truncated {
		t.Fatalf("kept %d bytes, truncated %v; want %d, true", len(out.Output), out.Truncated, MaxOutput)
	}
	msg := out.Err.Error()
	quoted := strconv.Quote(strings.Repeat("x", MaxMessageOutput))
	if !strings.Contains(msg, "message: "+quoted+" (the first 1024 of more than 10240 bytes)") || len(msg) > MaxMessageOutput+200 {
		t.Fatalf("message of %d bytes: %.300s…", len(msg), msg)
	}

	// A cut never splits a UTF-8 character.
	out = Run(context.Background(), execHook("sh", "-c", `printf 'x'; i=0; while [ $i -lt 600 ]; do printf 'é'; i=$((i+1)); done; exit 1`), spec.PostStop, 0)
	if msg := out.Err.Error(); strings.Contains(msg, `\x`) || !strings.Contains(msg, "(the first 1023 of 1201 bytes)") {
		t.Fatalf("cut inside a character: %.200s…%s", msg, msg[max(len(msg)-80, 0):])
	}

	// Nothing printed: the message is the error alone.
	out = Run(context.Background(), execHook("sh", "-c", "exit 2"), spec.PostStart, 0)
	if got := out.Err.Error(); got != "post_start hook: hook command exited with code 2" {
		t.Fatalf("message without output: %q", got)
	}
}

// An http_get hook answered with an error status keeps the body, bounded,
// and its message quotes it; a body that fits is not marked cut.
func TestFailedHTTPHookMessageQuotesTheBody(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("draining\x1b]0;pwned\a"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(strings.Repeat("y", 3*MaxOutput)))
	})
	mux.HandleFunc("/exact", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(strings.Repeat("z", MaxOutput)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	out := Run(context.Background(), httpHook(t, srv, "/fail"), spec.PreStop, 5*time.Second)
	var se *StatusError
	if !errors.As(out.Err, &se) || se.Code != 503 || string(out.Output) != "draining\x1b]0;pwned\a" || out.Truncated {
		t.Fatalf("%+v", out)
	}
	if want := `pre_stop hook: hook HTTP GET answered status 503, message: "draining\x1b]0;pwned\a"`; out.Err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", out.Err.Error(), want)
	}

	out = Run(context.Background(), httpHook(t, srv, "/big"), spec.PreStop, 5*time.Second)
	if len(out.Output) != MaxOutput || !out.Truncated || !strings.HasSuffix(out.Err.Error(), "(the first 1024 of more than 10240 bytes)") {
		t.Fatalf("big body: kept %d, truncated %v, %.80s…", len(out.Output), out.Truncated, out.Err)
	}
	out = Run(context.Background(), httpHook(t, srv, "/exact"), spec.PreStop, 5*time.Second)
	if len(out.Output) != MaxOutput || out.Truncated || !strings.HasSuffix(out.Err.Error(), "(the first 1024 of 10240 bytes)") {
		t.Fatalf("body of exactly MaxOutput: kept %d, truncated %v", len(out.Output), out.Truncated)
	}
}
