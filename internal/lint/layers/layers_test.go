package layers

import (
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/gotool"
)

const module = "github.com/podsup/podsup"

// mustNotDependOn: each package (a trailing "/..." takes in its subtree)
// may not depend, directly or through others, on any of the listed ones.
var mustNotDependOn = []struct {
	pkgs, forbidden []string
	why             string
}{
	{
		pkgs:      []string{"supervisor/..."},
		forbidden: []string{"sandbox", "sandbox/cgroups", "stack/...", "config", "api/..."},
		why:       "the supervisor reaches processes only through its Runtime (package stack adapts the sandbox runtime to it); of package sandbox it may use only the process primitives, sandbox/proc, and the pure seccomp compiler, sandbox/seccomp",
	},
	{
		pkgs:      []string{"pid1", "internal/execrun", "hooks", "probes"},
		forbidden: []string{"sandbox", "sandbox/cgroups"},
		why:       "they start and reap plain processes: sandbox/proc, without the holder, namespaces and cgroups",
	},
	{
		pkgs:      []string{"sandbox/proc"},
		forbidden: []string{"sandbox", "sandbox/cgroups"},
		why:       "the process primitives are the layer below the sandbox runtime",
	},
	{
		pkgs:      []string{"sandbox/..."},
		forbidden: []string{"supervisor/...", "config", "api/...", "stack"},
		why:       "the runtime knows nothing of what is supervised, configured or served",
	},
	{
		pkgs:      []string{"probes", "hooks"},
		forbidden: []string{"supervisor/...", "config", "api/...", "stack"},
		why:       "probes and hooks are run by the supervisor, never the other way",
	},
	{
		pkgs:      []string{"api"},
		forbidden: []string{"supervisor/...", "sandbox/...", "config", "stack"},
		why:       "a client of the control socket links the wire types and nothing of the runtime",
	},
	{
		pkgs:      []string{"spec"},
		forbidden: []string{"..."},
		why:       "spec is the vocabulary every layer shares: it depends on no other podsup package",
	},
}

// vocabularyMayImport is all that supervisor/lifecycle, the vocabulary
// the core and the supervisor share, may import: spec and standard
// packages that do no I/O.
var vocabularyMayImport = []string{
	module + "/spec",
	"cmp", "errors", "fmt", "iter", "maps", "math", "slices", "sort",
	"strconv", "strings", "time", "unicode", "unicode/utf8",
}

// coreMayImport is all that the supervisor's decision core may import:
// that and the vocabulary itself. Time comes in as arguments.
var coreMayImport = append([]string{lifecyclePkg}, vocabularyMayImport...)

const (
	corePkg      = module + "/supervisor/internal/core"
	lifecyclePkg = module + "/supervisor/lifecycle"
)

func TestImportRules(t *testing.T) {
	g := loadGraph(t)
	if len(g.imports) < 10 || g.imports[module+"/supervisor"] == nil {
		t.Fatalf("go list gave %d packages, without the supervisor: this test would check nothing", len(g.imports))
	}
	for _, r := range mustNotDependOn {
		for _, pkg := range g.matching(r.pkgs) {
			for _, path := range g.reachable(pkg) {
				dep := path[len(path)-1]
				if dep != pkg && matches(dep, r.forbidden) {
					t.Errorf("%s depends on %s (%s): %s", trim(pkg), trim(dep), strings.Join(trimAll(path), " → "), r.why)
				}
			}
		}
	}
	core, ok := g.imports[corePkg]
	if !ok {
		t.Fatalf("%s is not in the module: the core's rule checks nothing", corePkg)
	}
	for _, imp := range core {
		if !slices.Contains(coreMayImport, imp) {
			t.Errorf("the supervisor's core imports %s: it may import only %s (a decision core does no I/O and takes time as an argument)", imp, strings.Join(coreMayImport, ", "))
		}
	}
	vocabulary, ok := g.imports[lifecyclePkg]
	if !ok {
		t.Fatalf("%s is not in the module: its rule checks nothing", lifecyclePkg)
	}
	for _, imp := range vocabulary {
		if !slices.Contains(vocabularyMayImport, imp) {
			t.Errorf("%s imports %s: it may import only %s (the vocabulary the core shares is as pure as the core)", trim(lifecyclePkg), imp, strings.Join(vocabularyMayImport, ", "))
		}
	}
}

// graph is the module's packages (tests excluded) and what each imports.
type graph struct {
	imports map[string][]string // podsup package → its direct imports
}

func loadGraph(t *testing.T) graph {
	out := gotool.Output(t, "list", "-deps", "-f", `{{.ImportPath}}|{{join .Imports " "}}`, module+"/...")
	g := graph{imports: map[string][]string{}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		path, imports, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("unexpected line from go list: %q", line)
		}
		if path == module || strings.HasPrefix(path, module+"/") {
			g.imports[path] = strings.Fields(imports)
		}
	}
	return g
}

// matching lists the module's packages that patterns name.
func (g graph) matching(patterns []string) []string {
	var out []string
	for p := range g.imports {
		if matches(p, patterns) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// reachable returns, for every podsup package pkg depends on, one import
// path from pkg to it (breadth first, so a shortest one).
func (g graph) reachable(pkg string) [][]string {
	seen := map[string]bool{pkg: true}
	queue := [][]string{{pkg}}
	var out [][]string
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		out = append(out, path)
		for _, imp := range g.imports[path[len(path)-1]] {
			if _, ours := g.imports[imp]; ours && !seen[imp] {
				seen[imp] = true
				queue = append(queue, append(slices.Clip(path), imp))
			}
		}
	}
	return out
}

func matches(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if p == "..." {
			if pkg != module && strings.HasPrefix(pkg, module+"/") {
				return true
			}
			continue
		}
		if tree, ok := strings.CutSuffix(p, "/..."); ok {
			if pkg == module+"/"+tree || strings.HasPrefix(pkg, module+"/"+tree+"/") {
				return true
			}
		} else if pkg == module+"/"+p {
			return true
		}
	}
	return false
}

func trim(p string) string { return strings.TrimPrefix(p, module+"/") }

func trimAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = trim(p)
	}
	return out
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pkg      string
		patterns []string
		want     bool
	}{
		{module + "/sandbox", []string{"sandbox/..."}, true},
		{module + "/sandbox/cgroups", []string{"sandbox/..."}, true},
		{module + "/sandboxes", []string{"sandbox/..."}, false},
		{module + "/sandbox/cgroups", []string{"sandbox"}, false},
		{module + "/config", []string{"..."}, true},
		{"fmt", []string{"..."}, false},
	} {
		if got := matches(c.pkg, c.patterns); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pkg, c.patterns, got, c.want)
		}
	}
}
