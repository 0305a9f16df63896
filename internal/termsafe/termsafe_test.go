package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Printable text is kept as it is, non-ASCII letters included.
		{"", ""},
		{"Started process web", "Started process web"},
		{"grüße, 日本語, ελληνικά, emoji 🙂", "grüße, 日本語, ελληνικά, emoji 🙂"},
		{`C:\dir \d+ a\ b`, `C:\dir \d+ a\ b`},
		{`trailing\`, `trailing\`},
		// C0 controls.
		{"\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"\x1b[2J", `\x1b[2J`},
		{"bare\rCR", `bare\rCR`},
		{"a\nb", `a\nb`},
		{"a\tb", `a\tb`},
		{"\x00\x01\x08\x0b\x0c\x1f", `\x00\x01\b\v\f\x1f`},
		// DEL.
		{"del\x7f", `del\x7f`},
		// C1 controls, as UTF-8 (U+009B is CSI on some terminals).
		{"\u0080\u009b2J\u009f", `\u0080\u009b2J\u009f`},
		// Bytes that are not UTF-8: a lone C1 byte, a cut sequence, an
		// overlong encoding, a surrogate.
		{"\x9b2J", `\x9b2J`},
		{"cut \xe2\x82", `cut \xe2\x82`},
		{"\xc0\xaf", `\xc0\xaf`},
		{"\xed\xa0\x80", `\xed\xa0\x80`},
		// Bidi overrides and isolates.
		{"file\u202etxt.exe", `file\u202etxt.exe`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`},
		// Neighbours of the bidi ranges are printable (or at least inert).
		{"\u2029\u2065\u206a", "\u2029\u2065\u206a"},
		// Clean text keeps its backslashes, escape-like or not.
		{`printf 'a\n' \x1b \\`, `printf 'a\n' \x1b \\`},
		// Quoted text has a backslash doubled where it would read as an
		// escape, so that it reads back.
		{"printf 'a\\n'\r", `printf 'a\\n'\r`},
		{`\x1b \\ \u202e \d` + "\x1b", `\\x1b \\\ \\u202e \d\x1b`},
		{"\\\x1b", `\\\x1b`},
	} {
		got := Quote(tc.in)
		if got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got != tc.in {
			if back := unquote(t, got); back != tc.in {
				t.Errorf("unquote(Quote(%q)) = %q", tc.in, back)
			}
		}
	}
}

func TestKeepTabKeepsTabs(t *testing.T) {
	if got, want := string(Append(nil, "a\tb\x1b[31m\r", KeepTab)), `a`+"\t"+`b\x1b[31m\r`; got != want {
		t.Fatalf("Append(KeepTab) = %q, want %q", got, want)
	}
}

func TestEscapedLeavesBackslashes(t *testing.T) {
	// The body of a JSON string: its escapes stay; a raw C1 or bidi
	// character, which JSON need not escape, is quoted.
	in := `a\"b\u001b` + "\u009b\u202e"
	if got, want := string(Append(nil, in, Escaped)), `a\"b\u001b\u009b\u202e`; got != want {
		t.Fatalf("Append(Escaped) = %q, want %q", got, want)
	}
}

func TestWriterQuotesAStreamOfLines(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, KeepTab)
	// "ü" and "‮" (U+202E) split between writes are still read whole.
	in := []string{"one\x1b[2J\n", "t\twö\xc3", "\xbcrd\xe2\x80", "\xae\n", "end\xe2"}
	for _, p := range in {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "one\\x1b[2J\nt\twöürd\\u202e\nend\\xe2"; got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
}

func TestQuoteDoesNotCopyCleanText(t *testing.T) {
	s := strings.Repeat("clean text ", 10)
	if n := testing.AllocsPerRun(100, func() { _ = Quote(s) }); n != 0 {
		t.Fatalf("Quote of clean text allocated %v times", n)
	}
}

// FuzzQuote: whatever s holds, quoted it has no byte a terminal acts on
// (no C0 control but the kept tab, no DEL, no C1, only valid UTF-8, no
// bidi control), and, when quoting changed it, it reads back to s; its
// JSON through AppendJSON holds none either and reads back the same.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "\x1b]0;pwned\a\x1b[2J\r", "\\x1b\\", "\u202e\u009b\x9b\xff", "a\tb\nc", "日本\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fl := range []Flags{0, KeepTab} {
			q := string(Append(nil, s, fl))
			if !utf8.ValidString(q) {
				t.Fatalf("Append(%q, %d) = %q: not UTF-8", s, fl, q)
			}
			for _, r := range q {
				if r < 0x20 && !(r == '\t' && fl&KeepTab != 0) || r == 0x7f || unsafeRune(r) {
					t.Fatalf("Append(%q, %d) = %q holds %U", s, fl, q, r)
				}
			}
			if Needs(s, fl) != (q != s) {
				t.Fatalf("Needs(%q, %d) = %v, but Append gives %q", s, fl, Needs(s, fl), q)
			}
			if q == s {
				continue
			}
			if back := unquote(t, q); back != s {
				t.Fatalf("Append(%q, %d) = %q reads back as %q", s, fl, q, back)
			}
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		safe := AppendJSON(nil, js)
		for _, r := range string(safe) {
			if r < 0x20 || r == 0x7f || unsafeRune(r) {
				t.Fatalf("AppendJSON(%s) = %s holds %U", js, safe, r)
			}
		}
		var back1, back2 string
		if json.Unmarshal(js, &back1) != nil || json.Unmarshal(safe, &back2) != nil || back1 != back2 {
			t.Fatalf("AppendJSON(%s) = %s reads back as %q, not %q", js, safe, back2, back1)
		}
		var out bytes.Buffer
		w := NewWriter(&out, 0)
		for half := len(s) / 2; ; half = len(s) {
			_, _ = w.Write([]byte(s[:half]))
			s = s[half:]
			if s == "" {
				break
			}
		}
		_ = w.Flush()
		for _, c := range out.Bytes() {
			if c < 0x20 && c != '\n' || c == 0x7f {
				t.Fatalf("Writer wrote %q", out.String())
			}
		}
	})
}

// unquote reads quoted text back: the proof that quoting loses nothing.
func unquote(t *testing.T, q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c != '\\' || i+1 == len(q) {
			b.WriteByte(c)
			continue
		}
		switch n := q[i+1]; n {
		case 'a', 'b', 't', 'n', 'v', 'f', 'r', '\\':
			b.WriteByte(map[byte]byte{'a': '\a', 'b': '\b', 't': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r', '\\': '\\'}[n])
			i++
		case 'x':
			v, err := strconv.ParseUint(q[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad \\x escape in %q", q)
			}
			b.WriteByte(byte(v))
			i += 3
		case 'u':
			v, err := strconv.ParseUint(q[i+2:i+6], 16, 32)
			if err != nil {
				t.Fatalf("bad \\u escape in %q", q)
			}
			b.WriteRune(rune(v))
			i += 5
		default:
			b.WriteByte(c) // a backslash that needed no doubling
		}
	}
	return b.String()
}

func ExampleQuote() {
	fmt.Println(Quote("probe\x1b]0;pwned\a\x1b[2J\rdone \u202eexe.txt"))
	// Output: probe\x1b]0;pwned\a\x1b[2J\rdone \u202eexe.txt
}

func TestAppendJSONEscapesWhatEncodingJSONLeavesRaw(t *testing.T) {
	in := "a\x1b\x7f\u009b\u202e\u2069é\xff"
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(NewJSONWriter(&out))
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if want := `"a\u001b\u007f\u009b\u202e\u2069é\ufffd"` + "\n"; got != want {
		t.Fatalf("JSON %s written as %s, want %s", js, got, want)
	}
	var back string
	if err := json.Unmarshal([]byte(got), &back); err != nil || back != strings.ToValidUTF8(in, "\ufffd") {
		t.Fatalf("reads back as %q, %v", back, err)
	}
}
