package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceHasAValidExamplePerBlock: every block docs/config.md
// documents (each "<!-- schema: NAME -->" table) is shown in an example
// in its section, and every example loads as a whole configuration:
// an example a reader copies must work.
func TestReferenceHasAValidExamplePerBlock(t *testing.T) {
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(b), "\n## ")
	n := 0
	for _, sec := range sections {
		title, _, _ := strings.Cut(sec, "\n")
		m := schemaMarker.FindStringSubmatch(firstMarker(sec))
		if m == nil {
			continue
		}
		n++
		_, ex, ok := strings.Cut(sec, "\n```hcl\n")
		if !ok {
			t.Errorf("docs/config.md section %q (the %s block) has no ```hcl example", title, m[1])
			continue
		}
		ex, _, _ = strings.Cut(ex, "\n```")
		file := filepath.Join(t.TempDir(), "podsup.hcl")
		if err := os.WriteFile(file, []byte(ex+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(file); err != nil {
			var ce *Error
			var msg bytes.Buffer
			if errors.As(err, &ce) {
				_ = ce.WriteText(&msg, false)
			} else {
				msg.WriteString(err.Error())
			}
			t.Errorf("docs/config.md's example of the %s block does not load:\n%s\n%s", m[1], ex, msg.String())
		}
	}
	if n < 15 {
		t.Fatalf("found %d documented blocks in %s, want every block", n, referencePath)
	}
}

// firstMarker is the section's "<!-- schema: NAME -->" line, if any.
func firstMarker(sec string) string {
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "<!-- schema: ") {
			return l
		}
	}
	return ""
}
