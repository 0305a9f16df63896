package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// HookRunner runs lifecycle hooks; DefaultHookRunner (package hooks) is
// the one podsup uses. The supervisor calls Run in a goroutine of its own
// and posts the outcome to the group's worker, so a slow hook never blocks
// the worker. What an outcome means is the core's:
//
//   - pre_start runs before the process starts; an error fails that start
//     (PreStartHookError) and back-off applies as for a crash (X5).
//   - post_start runs once the process has started, concurrently with it;
//     until it returns the instance is neither running nor started and is
//     not probed (H1); an error kills it through the stop path (H2).
//   - pre_stop runs on every kill, not on a natural exit; its time is
//     charged to the grace (K3); an error is a FailedPreStopHook warning.
//   - post_stop runs once after each instance exited; an error is a
//     FailedPostStopHook warning (X5).
//
// ctx ends when the hook's instance's tree is SIGKILLed or the instance
// has exited (pre_start, post_start, pre_stop: K9), or when the group is
// stopped for good a second time (post_stop): Run should then return
// promptly, leaving no process behind.
type HookRunner interface {
	Run(ctx context.Context, req HookRequest) error
}

// HookRequest is one hook run.
type HookRequest struct {
	Group      string
	InstanceID string
	// Pid is the instance's main process; 0 before it started (pre_start)
	// and after it exited (post_stop).
	Pid     int
	Process spec.Process
	Point   spec.HookPoint
	Hook    spec.Hook
	// Budget is how long the supervisor waits for a pre_stop: the grace
	// (K3); 0 for the other points. It does not bound the hook: the
	// supervisor stops waiting at the budget and sends the stop signal,
	// and the hook runs on (within its own timeout, if it has one) until
	// ctx ends at the instance's SIGKILL (K9).
	Budget time.Duration
	// Spawn starts exec hook commands inside the group's sandbox (X6);
	// nil means proc.Start (podsup's own namespaces).
	Spawn func(*proc.Cmd) (*proc.Process, error)
	// Sandboxed says the group has a sandbox block: an exec hook is
	// narrowed as its process is there (StartSecurity).
	Sandboxed bool
}

// errNoHookRunner is what a hook reports when the supervisor has none.
var errNoHookRunner = errors.New("no hook runner configured")
