package logs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

// A hook's output joins its instance's log in the hook's stream: the tail
// and the API see the stream's name, podsup's console lines and the CRI
// file (whose stream column stays stdout) a mark before the text, JSON
// lines the stream. A pre_start's lines, written before its instance is
// attached, are that instance's once it is; a failed pre_start's stay
// the last instance's, for --previous.
func TestAppendHookMarksTheLinesAsTheHooks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var console, js syncBuffer
	h := newTestHub(t, HubOptions{Out: &console, Dir: dir})
	hj := newTestHub(t, HubOptions{Out: &js, Format: FormatJSON})

	for _, hub := range []*Hub{h, hj} {
		hub.AppendHook("web", "api", "1", spec.Log{}, spec.PreStart, []byte("preparing\n"))
		_, a := startSh(t, hub, "web", "api", "1", spec.Log{}, "echo serving")
		waitDone(t, a)
		hub.AppendHook("web", "api", "1", spec.Log{}, spec.PostStart, []byte("registered\nno newline"))
	}
	lines := mustTail(t, h, "web", "api", 0, false)
	var got []string
	for _, l := range lines {
		got = append(got, l.Stream.String()+" "+l.Text)
	}
	want := []string{"hook:pre_start preparing", "stdout serving", "hook:post_start registered", "hook:post_start no newline"}
	if !equalStrings(got, want) {
		t.Fatalf("tail: %q, want %q", got, want)
	}
	if lines[0].Instance != "1" {
		t.Fatalf("pre_start's line names instance %q", lines[0].Instance)
	}
	if _, err := h.Tail("web", "api", 0, true); err == nil {
		t.Fatal("the pre_start's lines made an instance of their own")
	}

	eventually(t, "console lines", func() bool { return strings.Count(console.String(), "\n") == 4 })
	if want := "web/api | [hook:pre_start] preparing\nweb/api | serving\nweb/api | [hook:post_start] registered\nweb/api | [hook:post_start] no newline\n"; console.String() != want {
		t.Fatalf("console:\n%s\nwant:\n%s", console.String(), want)
	}
	eventually(t, "JSON lines", func() bool { return strings.Count(js.String(), "\n") == 4 })
	if !strings.Contains(js.String(), `"instance":"1","stream":"hook:post_start","line":"registered"}`) {
		t.Fatalf("JSON:\n%s", js.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "web", "api.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\S+ stdout F \[hook:post_start\] registered$`).Match(b) {
		t.Fatalf("file:\n%s", b)
	}

	// A pre_start that failed its start: its lines are the current
	// instance's, then the previous one's when the next start's hook
	// prints.
	h.AppendHook("web", "api", "2", spec.Log{}, spec.PreStart, []byte("no database\n"))
	if cur := texts(mustTail(t, h, "web", "api", 0, false)); !equalStrings(cur, []string{"no database"}) {
		t.Fatalf("current after a failed pre_start: %q", cur)
	}
	h.AppendHook("web", "api", "3", spec.Log{}, spec.PreStart, []byte("retrying\n"))
	if prev := texts(mustTail(t, h, "web", "api", 0, true)); !equalStrings(prev, []string{"no database"}) {
		t.Fatalf("previous: %q", prev)
	}
	// A post_stop of an instance no longer kept goes to the console only.
	h.AppendHook("web", "api", "1", spec.Log{}, spec.PostStop, []byte("late\n"))
	eventually(t, "the late line", func() bool { return strings.Contains(console.String(), "web/api | [hook:post_stop] late\n") })
	if cur := texts(mustTail(t, h, "web", "api", 0, false)); !equalStrings(cur, []string{"retrying"}) {
		t.Fatalf("current after a late post_stop: %q", cur)
	}
	// Nor does a forgotten process come back for its post_stop's lines.
	h.Forget("web", "api")
	h.AppendHook("web", "api", "3", spec.Log{}, spec.PostStop, []byte("gone\n"))
	eventually(t, "the line of a forgotten process", func() bool { return strings.Contains(console.String(), "web/api | [hook:post_stop] gone\n") })
	if _, err := h.Tail("web", "api", 0, false); err == nil {
		t.Fatal("a post_stop's lines brought a forgotten process back")
	}
}
