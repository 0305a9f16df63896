package supervisor

import "github.com/podsup/podsup/supervisor/lifecycle"

// Status is a snapshot of every group. It is a copy: the caller may keep or
// modify it.
type Status struct {
	Groups []lifecycle.GroupStatus
}

// Group returns the named group's status.
func (s Status) Group(name string) (lifecycle.GroupStatus, bool) {
	for _, g := range s.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return lifecycle.GroupStatus{}, false
}
