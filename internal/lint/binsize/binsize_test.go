package binsize

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/gotool"
)

const (
	module    = "github.com/podsup/podsup"
	benchPath = "../../../docs/benchmarks.md"
	// section is the heading of the per-dependency table.
	section = "### What each dependency adds"
)

// majorVersion is a module path's /vN suffix, which the table may leave out.
var majorVersion = regexp.MustCompile(`/v[0-9]+$`)

// TestEveryLinkedModuleHasASizeLine: each module that podsup's binary
// links (go list -deps ./cmd/podsup) is named in the per-dependency
// section of docs/benchmarks.md, written without "github.com/" and its
// major version if the writer likes ("zclconf/go-cty").
func TestEveryLinkedModuleHasASizeLine(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(benchPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, section)
	if start < 0 {
		t.Fatalf("%s has no %q section", benchPath, section)
	}
	text := doc[start:]
	if end := strings.Index(text[len(section):], "\n### "); end >= 0 {
		text = text[:len(section)+end]
	}
	out := gotool.Output(t, "list", "-deps", "-f", `{{with .Module}}{{.Path}}{{end}}`, module+"/cmd/podsup")
	seen := map[string]bool{}
	for _, m := range strings.Fields(out) {
		if m == module || seen[m] {
			continue
		}
		seen[m] = true
		short := majorVersion.ReplaceAllString(strings.TrimPrefix(m, "github.com/"), "")
		if !strings.Contains(text, short) {
			t.Errorf("podsup links %s, which the %q table of docs/benchmarks.md does not name: run scripts/size-by-dependency and add what it costs", m, strings.TrimPrefix(section, "### "))
		}
	}
	if len(seen) < 5 {
		t.Fatalf("go list named only %d modules besides podsup: this test would check little", len(seen))
	}
}
