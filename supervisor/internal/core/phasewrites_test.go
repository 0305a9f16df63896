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

// TestPhaseIsWrittenOnlyByFire holds the table's promise: an instance's
// phase changes only in fire, which checks every change against the
// table. It type-checks the package's own (non-test) files and fails on
// any other assignment to a value of type phase held in a field (a
// handler returns the phase it leaves the instance in; fire writes it).
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
	phaseType := pkg.Scope().Lookup("phase").Type()
	writes := 0
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
					if !ok || !types.Identical(info.TypeOf(sel), phaseType) {
						continue
					}
					if fn.Name.Name == "fire" {
						writes++
						continue
					}
					t.Errorf("%s: %s sets an instance's phase outside fire: return the phase from the transition's handler instead", fset.Position(sel.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	}
	if writes != 1 {
		t.Errorf("fire writes the phase in %d places, want 1", writes)
	}
}
