package api_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/gotool"
)

const module = "github.com/podsup/podsup/"

// clientMayLink are the only packages outside the standard library that a
// program built on package api may link: the wire types and the client
// need nothing of podsup's runtime, nor its third-party libraries.
var clientMayLink = map[string]bool{
	module + "api":                      true,
	module + "api/internal/clientcheck": true,
	module + "spec":                     true,
}

// TestClientLinksNoRuntime lists, with `go list -deps`, every package a
// minimal client program (internal/clientcheck) links, and fails naming
// each one that is neither standard nor in clientMayLink: a Go program
// that only talks to a running podsup must not carry the supervisor, the
// sandbox or the cgroup code.
func TestClientLinksNoRuntime(t *testing.T) {
	out := gotool.Output(t, "list", "-deps", "-f", `{{.ImportPath}}|{{.Standard}}|{{join .Imports " "}}`, "./internal/clientcheck")
	importers := map[string][]string{}
	var linked []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		path, rest, ok := strings.Cut(line, "|")
		standard, imports, ok2 := strings.Cut(rest, "|")
		if !ok || !ok2 {
			t.Fatalf("unexpected line from go list: %q", line)
		}
		for _, imp := range strings.Fields(imports) {
			importers[imp] = append(importers[imp], path)
		}
		if standard != "true" {
			linked = append(linked, path)
		}
	}
	if !slices.Contains(linked, module+"api") {
		t.Fatalf("go list does not show %sapi among the client's packages, so this test checks nothing:\n%s", module, out)
	}
	for _, p := range linked {
		if !clientMayLink[p] {
			slices.Sort(importers[p])
			t.Errorf("a program that only uses package api links %s (imported by %s)", p, strings.Join(importers[p], ", "))
		}
	}
}
