package onereaper_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/podsup/podsup/internal/lint/onereaper"
)

// The testdata packages carry `// want` comments on every forbidden call
// and none on the allowed ones (sync.WaitGroup.Wait, a method named Wait
// of another type).
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), onereaper.Analyzer, "bad")
}
