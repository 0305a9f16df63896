package core

import (
	"go/build"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/podsup/podsup"

// allowedImports is everything the core's own code may import: the
// standard library's packages that do no I/O, and spec. Time comes in as
// arguments (no clock), signals as spec.Signal (no syscall), and effects
// go out as actions the supervisor's worker carries out.
var allowedImports = []string{
	"cmp", "errors", "fmt", "maps", "math", "slices", "sort", "strconv",
	"strings", "time", "unicode", "unicode/utf8",
	module + "/spec",
}

// forbiddenImports are named so that a failure reads plainly; any import
// outside allowedImports fails the test anyway.
var forbiddenImports = []string{
	"os", "os/exec", "os/signal", "syscall", "net", "io", "io/fs", "context",
	"sync", "log", module + "/clock", module + "/sandbox",
}

// TestCoreImportsNoIO keeps the core pure: its own code imports only
// allowedImports, and of podsup's packages only spec (and what spec
// itself uses) are among its dependencies. fmt reaches os through the
// standard library, so the transitive closure of the standard library is
// not checked: what matters is that the core's code cannot name an I/O
// package.
func TestCoreImportsNoIO(t *testing.T) {
	root := moduleRoot(t)
	pkg, err := build.ImportDir(filepath.Join(root, "supervisor", "internal", "core"), 0)
	if err != nil {
		t.Fatalf("reading the core's imports: %v", err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("the core imports nothing: the wrong directory was read")
	}
	for _, imp := range pkg.Imports {
		if slices.Contains(forbiddenImports, imp) {
			t.Errorf("the core imports %s, which does I/O or reads a clock", imp)
		} else if !slices.Contains(allowedImports, imp) {
			t.Errorf("the core imports %s, which is not on its list of pure packages", imp)
		}
	}
	// Of podsup's own packages, only spec and its dependencies may be
	// reached.
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] || !strings.HasPrefix(path, module+"/") {
			return
		}
		seen[path] = true
		p, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(path, module+"/")), 0)
		if err != nil {
			t.Fatalf("reading the imports of %s: %v", path, err)
		}
		for _, imp := range p.Imports {
			walk(imp)
		}
	}
	for _, imp := range pkg.Imports {
		walk(imp)
	}
	for path := range seen {
		if path != module+"/spec" && !strings.HasPrefix(path, module+"/spec/") {
			t.Errorf("the core depends on %s", path)
		}
	}
}

// moduleRoot is the repository's root: three levels above this file.
func moduleRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
