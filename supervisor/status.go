package supervisor

// Status is a snapshot of every group. It is a copy: the caller may keep or
// modify it.
type Status struct {
	Groups []GroupStatus
}

// Group returns the named group's status.
func (s Status) Group(name string) (GroupStatus, bool) {
	for _, g := range s.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return GroupStatus{}, false
}
