package logging

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A probe's output, a process's name or a value in podsup's log reaches
// the terminal that shows the log (or a file, read on one later) with
// what a terminal would act on quoted: no title change, no cleared
// screen, no line overwritten by a bare CR, no reordered text.
func TestConsoleQuotesWhatATerminalWouldActOn(t *testing.T) {
	var out bytes.Buffer
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.New(&Console{Out: &out}).With().Timestamp().Logger()
	hostile := "probe\x1b]0;pwned\a\x1b[2J\rX\u009b1m\u202eexe.txt\x7f"
	log.Warn().Str("process", "p\x1b[2J").Str("message2", "with space "+hostile).Str("bad\u202ekey", "v").Msg("Readiness probe failed: " + hostile)
	(&Console{Out: &out}).Write([]byte("not json \x1b[2J\r\n"))
	got := out.String()
	for i, c := range []byte(strings.TrimSuffix(got, "\n")) {
		if c < 0x20 && c != '\n' || c == 0x7f {
			t.Fatalf("raw control byte %#x at %d in %q", c, i, got)
		}
	}
	for _, bad := range []string{"\u009b", "\u202e"} {
		if strings.Contains(got, bad) {
			t.Fatalf("%q holds %q raw", got, bad)
		}
	}
	for _, want := range []string{
		`Readiness probe failed: probe\x1b]0;pwned\a\x1b[2J\rX\u009b1m\u202eexe.txt\x7f`,
		` process=p\x1b[2J`,
		` message2="with space probe\u001b]0;pwned\u0007\u001b[2J\rX\u009b1m\u202eexe.txt\u007f"`, // zerolog escapes DEL itself
		`bad\u202ekey=v`,
		`not json \x1b[2J\r` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// A message of several lines (a refused reload's problems) shows as
// lines: the first with the fields, the others indented below it, each
// still quoted.
func TestConsoleShowsAMessagesLines(t *testing.T) {
	var out bytes.Buffer
	log := zerolog.New(&Console{Out: &out})
	log.Error().Str("config", "/etc/podsup.hcl").
		Msg("reload refused, the running configuration stays:\nweb: bad\x1b[2J\napi: worse")
	want := "ERR reload refused, the running configuration stays: config=/etc/podsup.hcl\n" +
		"    web: bad\\x1b[2J\n" +
		"    api: worse\n"
	if got := out.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
