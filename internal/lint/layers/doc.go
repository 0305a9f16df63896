// Package layers holds the test of podsup's import rules: which of its
// packages may depend on which (docs/architecture.md draws the layers).
// The rules live here as data, so that a change of the architecture is a
// change of this table, reviewed as such. CI runs the test on its own step
// before the long tests, so a broken rule is named early.
package layers
