package sandbox

// State is where a process is in its lifecycle (the CRI's container states):
//
//	      Create          Start             exit / Stop            Remove
//	() ──────────► created ─────► running ─────────────► exited ─────────► removed
//	                  │  │            └─── start failed ───────┘▲
//	                  │  └──── Stop ─────────────────────────────┘
//	                  └──────────────────────── Remove ──────────────────► removed
//
// A process is running from just before its fork, so that an exit reaped
// before the fork's outcome is known finds it running.
// The runtime applies a transition only when told to (Create, Start, Stop,
// Remove) or when the kernel reports an exit; it never restarts anything.
type State string

const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateRemoved State = "removed"
)

// Event is what moves a process from one State to another.
type Event string

const (
	// EventStart: Start forked and exec'd the program.
	EventStart Event = "start"
	// EventStartFailed: Start could not run the program (not found, not
	// executable); the process is exited with a start error, never ran.
	EventStartFailed Event = "fail to start"
	// EventExit: the kernel reported the process's exit (of its own
	// volition, or because Stop or a sandbox's end killed it).
	EventExit Event = "exit"
	// EventStopCreated: Stop of a process never started; it is exited
	// without having run (kubelet may stop a container it only created).
	EventStopCreated Event = "stop"
	// EventRemove: Remove dropped it (and its cgroup).
	EventRemove Event = "remove"
)

// transitions is the whole state machine: transitions[from][event] = to.
// A pair not listed is illegal and yields a *TransitionError. Removing a
// process that was created but never started is allowed (undoing a Create),
// which the CRI's list does not spell out.
var transitions = map[State]map[Event]State{
	StateCreated: {
		EventStart:       StateRunning,
		EventStopCreated: StateExited,
		EventRemove:      StateRemoved,
	},
	StateRunning: {
		EventStartFailed: StateExited,
		EventExit:        StateExited,
	},
	StateExited: {
		EventRemove: StateRemoved,
	},
	StateRemoved: {},
}

// transition is the one place a process's state changes.
func transition(id string, from State, ev Event) (State, error) {
	if to, ok := transitions[from][ev]; ok {
		return to, nil
	}
	return from, &TransitionError{ID: id, From: from, Event: ev}
}
