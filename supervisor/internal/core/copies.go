package core

import "github.com/podsup/podsup/supervisor/lifecycle"

// Deep copies and checks of the public types, for the supervisor's API:
// what it hands a caller shares nothing with what the core keeps.

// CloneRecreateSpec is a deep copy of s.
func CloneRecreateSpec(s RecreateSpec) RecreateSpec { return s.clone() }

// CloneRecreateStatus is a deep copy of s.
func CloneRecreateStatus(s RecreateStatus) RecreateStatus { return s.clone() }

// CloneGroupStatus is a deep copy of g.
func CloneGroupStatus(g lifecycle.GroupStatus) lifecycle.GroupStatus { return g.Clone() }

// ValidateRecreate is C1's static part: what needs no knowledge of the
// group. It returns a *RecreateSpecError listing every problem.
func ValidateRecreate(s RecreateSpec) error { return s.validate() }
