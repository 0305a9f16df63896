// Package binsize holds the test that keeps docs/benchmarks.md's table of
// what each dependency adds to the podsup binary complete: every module
// podsup links must be named there, so that the binary cannot grow by a
// dependency without a line saying what it costs
// (scripts/size-by-dependency measures it).
package binsize
