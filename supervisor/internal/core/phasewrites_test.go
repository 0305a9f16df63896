package core

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPhaseIsWrittenOnlyByFire holds the tables' promise: an instance's
// phase changes only in fire, and a process's rest only in fireRest,
// which check every change against their table. It type-checks the
// package's own (non-test) files and fails on any other assignment to a
// field of type phase or rest (a handler returns the phase it leaves the
// instance in; fire writes it).
func TestPhaseIsWrittenOnlyByFire(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/podsup/podsup/supervisor/internal/core", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	writers := map[types.Type]string{
		pkg.Scope().Lookup("phase").Type(): "fire",
		pkg.Scope().Lookup("rest").Type():  "fireRest",
	}
	writes := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var lhs []ast.Expr
				switch s := n.(type) {
				case *ast.AssignStmt:
					lhs = s.Lhs
				case *ast.IncDecStmt:
					lhs = []ast.Expr{s.X}
				}
				for _, e := range lhs {
					sel, ok := e.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					writer, ok := writers[info.TypeOf(sel)]
					if !ok {
						continue
					}
					if fn.Name.Name == writer {
						writes[writer]++
						continue
					}
					t.Errorf("%s: %s sets a %s outside %s: go through the table (a handler returns the phase it leaves the instance in)", fset.Position(sel.Pos()), fn.Name.Name, info.TypeOf(sel), writer)
				}
				return true
			})
		}
	}
	for _, writer := range writers {
		if writes[writer] != 1 {
			t.Errorf("%s writes its state in %d places, want 1", writer, writes[writer])
		}
	}
}
