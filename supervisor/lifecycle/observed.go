package lifecycle

import "github.com/podsup/podsup/spec"

// What the runtime reports about instances and groups, as the supervisor's core reads it.

// ExitStatus is how an instance ended.
type ExitStatus struct {
	// Code is the exit code, or 128+N when signal N killed it.
	Code int
	// Signal is the signal that killed it, 0 when it exited.
	Signal spec.Signal
	// OOMKilled is set when the kernel's OOM killer ended it.
	OOMKilled bool
}

// RuntimeEvent is something a runtime did to a group on its own account,
// published as one of the group's events.
type RuntimeEvent struct {
	Type    EventType
	Reason  string
	Message string
}
