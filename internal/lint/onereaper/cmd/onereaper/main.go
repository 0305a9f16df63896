// Command onereaper runs the onereaper analyzer as a vet tool:
//
//	go build -o /tmp/onereaper ./internal/lint/onereaper/cmd/onereaper
//	go vet -vettool=/tmp/onereaper ./...
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/podsup/podsup/internal/lint/onereaper"
)

func main() { singlechecker.Main(onereaper.Analyzer) }
