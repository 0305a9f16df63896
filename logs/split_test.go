package logs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// splitChunks feeds chunks to the splitter as successive reads, then EOF,
// and renders each line as TEXT or TEXT+"~" when Partial.
func splitChunks(limit int, chunks ...string) []string {
	h := &Hub{opts: withDefaults(HubOptions{MaxLineBytes: limit})}
	s := &stream{}
	var out []string
	var b batch
	collect := func() {
		for _, r := range b.refs {
			t := string(b.text(r))
			if r.partial {
				t += "~"
			}
			out = append(out, t)
		}
		b.reset()
	}
	for _, c := range chunks {
		h.split(s, []byte(c), &b)
		collect()
	}
	if len(s.partial) > 0 { // what readStream does at EOF
		b.add(s.partial, false)
		collect()
	}
	return out
}

func TestSplit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 25)
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"lines in one read", []string{"a\nbb\n\nccc\n"}, []string{"a", "bb", "", "ccc"}},
		{"partial line joined across reads", []string{"ab", "c", "d\ne", "f\n"}, []string{"abcd", "ef"}},
		{"unterminated last line flushed at EOF", []string{"a\nlast"}, []string{"a", "last"}},
		{"long line split at the limit", []string{long + "\n"}, []string{"xxxxxxxxxx~", "xxxxxxxxxx~", "xxxxx"}},
		{"long line split across reads", []string{"xxxxxxx", "xxxxxxx", "xxxxxxx", "xxxx\n"}, []string{"xxxxxxxxxx~", "xxxxxxxxxx~", "xxxxx"}},
		{"exactly the limit is one line", []string{"0123456789", "\n"}, []string{"0123456789"}},
		{"long unterminated tail", []string{long}, []string{"xxxxxxxxxx~", "xxxxxxxxxx~", "xxxxx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := splitChunks(10, tc.chunks...); !equalStrings(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConsoleLinePadsNameLikeCompose(t *testing.T) {
	t.Parallel()
	got := string(appendConsole(nil, "web/api", 11, "", []byte("hello"), false))
	if got != "web/api     | hello\n" {
		t.Fatalf("got %q", got)
	}
	// A colour takes in the name, its padding and the bar.
	got = string(appendConsole(nil, "web/api", 9, "\x1b[36m", []byte("hello"), false))
	if got != "\x1b[36mweb/api   |\x1b[0m hello\n" {
		t.Fatalf("coloured: %q", got)
	}
}

func TestJSONLineDecodes(t *testing.T) {
	t.Parallel()
	when := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC)
	in := &instance{proc: &procLog{group: "web", process: `a"pi`}, instance: "3"}
	text := "tab\there \"quoted\" back\\slash \x01 ctl é \xff bad utf8 </script>"
	b := appendJSON(nil, when, in, Stderr, true, []byte(text))
	if b[len(b)-1] != '\n' {
		t.Fatal("no newline")
	}
	var got struct {
		Time                             time.Time
		Group, Process, Instance, Stream string
		Line                             string
		Partial                          bool
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := strings.ToValidUTF8(text, "\ufffd")
	if !got.Time.Equal(when) || got.Group != "web" || got.Process != `a"pi` || got.Instance != "3" ||
		got.Stream != "stderr" || got.Line != want || !got.Partial {
		t.Fatalf("decoded %+v from %s", got, b)
	}
}

func TestCRIFileLine(t *testing.T) {
	t.Parallel()
	when := time.Date(2024, 5, 1, 10, 0, 0, 5, time.UTC)
	if got := string(appendCRI(nil, when, Stdout, false, []byte("hi"))); got != "2024-05-01T10:00:00.000000005Z stdout F hi\n" {
		t.Fatalf("got %q", got)
	}
	if got := string(appendCRI(nil, when, Stderr, true, []byte("hi"))); got != "2024-05-01T10:00:00.000000005Z stderr P hi\n" {
		t.Fatalf("got %q", got)
	}
}

func TestDroppedNoticeFormats(t *testing.T) {
	t.Parallel()
	when := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	if got := string(appendDroppedNotice(nil, FormatConsole, when, 42)); got != "podsup: dropped 42 lines\n" {
		t.Fatalf("console notice %q", got)
	}
	b := appendDroppedNotice(nil, FormatJSON, when, 42)
	var got struct {
		Time    time.Time
		Stream  string
		Dropped int
		Line    string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !got.Time.Equal(when) || got.Stream != "podsup" || got.Dropped != 42 || got.Line != "podsup: dropped 42 lines" {
		t.Fatalf("decoded %+v from %s", got, b)
	}
}
