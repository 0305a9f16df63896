package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referencePath is the configuration reference, which podsup.hcl(5) is made
// from.
const referencePath = "../docs/config.md"

var (
	schemaMarker = regexp.MustCompile(`^<!-- schema: ([a-z_-]+) -->$`)
	fieldRow     = regexp.MustCompile("^\\| `([a-z_]+)` \\|")
)

// readReference returns, for each table of docs/config.md bound to a
// schema by a "<!-- schema: NAME -->" line, the fields its rows name.
func readReference(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string][]string{}
	current := ""
	for _, line := range strings.Split(string(b), "\n") {
		if m := schemaMarker.FindStringSubmatch(line); m != nil {
			if _, dup := tables[m[1]]; dup {
				t.Errorf("%s: two tables for the %s block", referencePath, m[1])
			}
			current = m[1]
			tables[current] = []string{}
			continue
		}
		if current == "" {
			continue
		}
		if m := fieldRow.FindStringSubmatch(line); m != nil {
			tables[current] = append(tables[current], m[1])
		} else if !strings.HasPrefix(line, "|") {
			if len(tables[current]) > 0 {
				current = "" // the table ended
			}
		}
	}
	return tables
}

// TestReferenceMatchesSchema: docs/config.md documents every field and
// nested block of every block the decoder accepts, and nothing else.
func TestReferenceMatchesSchema(t *testing.T) {
	t.Parallel()
	tables := readReference(t)
	if len(schemas) < 10 {
		t.Fatalf("only %d schemas registered: the test would check little", len(schemas))
	}
	seen := map[string]bool{}
	for _, s := range schemas {
		seen[s.name] = true
		var fields []string
		for _, a := range s.schema.Attributes {
			fields = append(fields, a.Name)
		}
		for _, b := range s.schema.Blocks {
			fields = append(fields, b.Type)
		}
		documented, ok := tables[s.name]
		if !ok {
			t.Errorf("%s has no table for the %s block (a \"<!-- schema: %s -->\" line above it)", referencePath, s.name, s.name)
			continue
		}
		for _, f := range fields {
			if !slices.Contains(documented, f) {
				t.Errorf("the %s block's %s is not in %s", s.name, f, referencePath)
			}
		}
		for _, f := range documented {
			if !slices.Contains(fields, f) {
				t.Errorf("%s documents %s in the %s block, which the decoder does not accept", referencePath, f, s.name)
			}
		}
	}
	for name := range tables {
		if !seen[name] {
			t.Errorf("%s has a table for a %s block, which the decoder does not have", referencePath, name)
		}
	}
}
