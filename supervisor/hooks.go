package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/podsup/podsup/spec"
)

// HookRunner runs lifecycle hooks; package hooks will provide one. The
// supervisor calls Run in a goroutine of its own and posts the outcome to
// the group's worker, so a slow hook never blocks the worker.
//
// Today only pre_stop is wired (K3: its time is charged to the grace).
// The seams for the others: pre_start would run between the back-off check
// and startAction and veto the start (X5, reason PreStartHookError);
// post_start would hold the instance's running/started flags until it
// returns (H1) and kill it through beginStop on failure (H2); post_stop
// would be posted after finish() as a notification (X5).
type HookRunner interface {
	Run(ctx context.Context, req HookRequest) error
}

// HookRequest is one hook run.
type HookRequest struct {
	Group      string
	InstanceID string
	Pid        int
	Process    spec.Process
	Point      spec.HookPoint
	Hook       spec.Hook
	// Budget bounds the run: the grace period for pre_stop (K3). The
	// supervisor stops waiting at the budget whatever Run does.
	Budget time.Duration
}

// errNoHookRunner is what a pre_stop reports when Options.Hooks is nil.
var errNoHookRunner = errors.New("no hook runner configured (Options.Hooks is nil)")
