package onereaper_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/podsup/podsup/internal/lint/onereaper"
)

// The testdata packages carry `// want` comments on every forbidden call
// and none on the allowed ones (sync.WaitGroup.Wait, a method named Wait
// of another type, any wait in package proc itself).
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), onereaper.Analyzer, "bad")
}

// Only package sandbox/proc, the one reaper's, may wait: not the runtime
// above it, not a package under it.
func TestOnlyTheReapersPackageMayWait(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), onereaper.Analyzer,
		"github.com/podsup/podsup/sandbox/proc",
		"github.com/podsup/podsup/sandbox",
		"github.com/podsup/podsup/sandbox/proc/sub")
}
