package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/api"
)

// hookOutputConfig: web/http's hooks echo (as examples/web.hcl's
// post_start does); web/bad's post_start prints what a terminal acts on
// and 3000 bytes more, then fails.
const hookOutputConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
backoff {
  initial = "5s"
  max     = "10s"
}
group "web" {
  termination_grace_period = "2s"
  process "http" {
    command = ["sleep", "1000"]
    pre_start {
      exec { command = ["sh", "-c", "echo preparing"] }
    }
    post_start {
      exec { command = ["sh", "-c", "echo web: http server started"] }
    }
  }
  process "bad" {
    command = ["sleep", "1000"]
    post_start {
      exec { command = ["sh", "-c", "printf 'cannot register\\033]0;pwned\\007\\n'; head -c 3000 /dev/zero | tr -c y y; exit 3"] }
    }
  }
}
`

// badHookMessage is how the failing post_start's output reads in its
// event: quoted as the kubelet quotes it (%q), its first 1 KiB.
var badHookMessage = regexp.MustCompile(`^PostStart hook for process bad failed: post_start hook: hook command exited with code 3, message: "cannot register\\x1b\]0;pwned\\a\\ny{998}" \(the first 1024 of 3026 bytes\)$`)

// TestUpHookOutputInLogsAndEvents is #26 item 3: what a hook prints is in
// its process's log, marked as the hook's, whether it succeeded or not;
// a failed post_start's output is in its FailedPostStartHook event
// (kubelet: "... failed - error: %v, message: %q"), bounded, and shows
// on a terminal without a byte the terminal would act on.
func TestUpHookOutputInLogsAndEvents(t *testing.T) {
	t.Parallel()
	f := startUp(t, hookOutputConfig)
	f.waitRunning(t, "web", "http")

	// podsup logs: the hooks' lines, marked, pre_start's in the tail of
	// the instance it ran for.
	var out string
	if !eventually(func() bool {
		_, out = f.ctl(t, "logs", "web/http")
		return out == "[hook:pre_start] preparing\n[hook:post_start] web: http server started\n"
	}) {
		t.Fatalf("podsup logs web/http: %q", out)
	}
	code, out := f.ctl(t, "logs", "web/http", "-o", "json")
	var l api.LogLine
	if code != 0 || json.Unmarshal([]byte(out[strings.IndexByte(out, '\n')+1:]), &l) != nil ||
		l.Stream != "hook:post_start" || l.Line != "web: http server started" || l.Instance == "" {
		t.Fatalf("logs -o json: %d %q", code, out)
	}

	// The failed post_start: its output in its event, quoted and cut.
	var failed api.Event
	if !eventually(func() bool {
		_ = f.c.Events(context.Background(), false, func(e api.Event) error {
			if e.Reason == "FailedPostStartHook" && e.Process == "bad" {
				failed = e
			}
			return nil
		})
		return failed.Message != ""
	}) {
		t.Fatal("no FailedPostStartHook event for web/bad")
	}
	if !badHookMessage.MatchString(failed.Message) {
		t.Fatalf("FailedPostStartHook message:\n%s", failed.Message)
	}
	if _, out = f.ctl(t, "events"); !strings.Contains(out, `message: "cannot register\x1b]0;pwned\a\nyyy`) {
		t.Errorf("podsup events lacks the hook's output:\n%s", out)
	}
	// ... and all of it in the log, marked, after the lines of the hook.
	if !eventually(func() bool {
		_, out = f.ctl(t, "logs", "web/bad")
		return strings.HasPrefix(out, "[hook:post_start] cannot register\x1b]0;pwned\a\n[hook:post_start] yyy") &&
			strings.Count(out, "y") >= 3000
	}) {
		t.Fatalf("podsup logs web/bad: %.200q", out)
	}

	// On a terminal, events and describe show the message with nothing
	// a terminal acts on.
	for _, args := range [][]string{{"events"}, {"describe", "web/bad"}} {
		term := newTermCapture(t)
		shown := term.run(t, append([]string{"--socket", f.socket}, args...)...)
		if bad := rawControl(shown); bad != "" {
			t.Errorf("podsup %s wrote %s to a terminal:\n%q", args[0], bad, shown)
		}
		if !strings.Contains(shown, `exited with code 3, message: "cannot register\x1b]0;pwned\a\n`) {
			t.Errorf("podsup %s on a terminal lacks the hook's output:\n%s", args[0], shown)
		}
	}

	// podsup up's own output has the echo, prefixed and marked.
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
	if all := f.up.rest(t); !regexp.MustCompile(`(?m)^web/http +\| \[hook:post_start\] web: http server started$`).MatchString(all) {
		t.Fatalf("podsup up's output lacks the marked post_start line:\n%s", all)
	}
}
