// Package onereaper is a vet analyzer that enforces podsup's one-reaper
// rule (docs/architecture.md, package proc's doc): only package
// sandbox/proc, which owns the one reaper, may wait for processes; not the
// runtime above it (package sandbox), not a package under it. With proc's
// wait4(-1) loop running, any other waiter — os/exec's
// Cmd.Wait/Run/Output/CombinedOutput, os.Process.Wait, a stray wait4 —
// races it, and one of them loses the exit status ("waitid: no child
// processes").
package onereaper

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Analyzer reports calls that wait for a process outside package proc.
var Analyzer = &analysis.Analyzer{
	Name: "onereaper",
	Doc:  "reports process waits outside package sandbox/proc (podsup has one reaper)",
	Run:  run,
}

// owner is the one package that may wait: it holds the reaper.
const owner = "github.com/podsup/podsup/sandbox/proc"

// forbidden are the functions and methods that wait for a child.
var forbidden = map[string]bool{
	"(*os/exec.Cmd).Wait":           true,
	"(*os/exec.Cmd).Run":            true,
	"(*os/exec.Cmd).Output":         true,
	"(*os/exec.Cmd).CombinedOutput": true,
	"(*os.Process).Wait":            true,
	"syscall.Wait4":                 true,
	"golang.org/x/sys/unix.Wait4":   true,
	"golang.org/x/sys/unix.Waitid":  true,
}

func run(pass *analysis.Pass) (any, error) {
	path := strings.TrimSuffix(pass.Pkg.Path(), "_test")
	if path == owner {
		return nil, nil
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var id *ast.Ident
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				id = fn.Sel
			case *ast.Ident:
				id = fn
			default:
				return true
			}
			obj, ok := pass.TypesInfo.Uses[id].(*types.Func)
			if ok && forbidden[obj.FullName()] {
				pass.Reportf(call.Pos(), "%s waits for a process outside package proc: podsup has one reaper (sandbox/proc); start processes with proc.Start and wait with Process.Wait/Done", obj.FullName())
			}
			return true
		})
	}
	return nil, nil
}
