package supervisor

import (
	"errors"
	"sync/atomic"
	"syscall"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/internal/core"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Armed restarts (docs/semantics.md R8, docs/architecture.md "A restart
// armed in advance").
//
// A process restarted without back-off used to cross three goroutines
// between its exit and its next fork: the reaper posted the exit, the
// group's worker stepped the core, which decided the restart, and a start
// goroutine forked. Where the core can take that decision before the exit
// (core.Group.ArmedRestart: it depends on nothing but the exit code), the
// worker hands it to the running instance as an arm, and the reaper's
// goroutine, which runs the instance's OnExit, carries it out at once:
//
//  1. Arm. After the core took in an instance's start, the worker asks
//     ArmedRestart; when it answers, the instance's armSlot gets an
//     armedRestart holding the next instance's start request.
//  2. Claim. On the exit, OnExit (on the reaper's goroutine) takes the arm
//     with a compare-and-swap, checks that the exited tree is empty (X10:
//     one read of cgroup.events), and calls Start under WithoutWaiting.
//     It then posts the exit and the start's outcome together
//     (claimedInput). A tree still populated, or a layer that would have
//     to wait, declines the claim: the exit goes the usual way.
//  3. Disarm. Before the worker steps an input that could change the
//     decision (a stop, a shutdown, a reload, a recreate, a dependency,
//     settings, anything it does not know), it takes every arm back with
//     the same compare-and-swap. One the reaper claimed first is stepped
//     first, so the core hears of the restart before the input that
//     followed it.
//  4. Reconcile. The core steps the exit as it always does and, having
//     answered ArmedRestart, asks for the start of the armed instance; the
//     worker answers it with the outcome it already holds. Events, the
//     restart count, probes and the post-exit cleanup follow the usual
//     path. Should the core ever ask for anything else, the instance
//     started early is killed and removed, and the mismatch is logged.
//
// The core stays the one place that decides; the reaper only carries out
// a decision taken in advance, and only while nothing could have changed
// it.

// The states of an armedRestart. Only armArmed → armClaiming (the claim)
// and armArmed → armDisarmed (the worker) race; the rest are the claim's
// own steps.
const (
	armArmed int32 = iota
	armClaiming
	armClaimed
	armDeclined
	armDisarmed
)

// armedRestart is one instance's next start, decided in advance.
type armedRestart struct {
	state atomic.Int32
	// cur is the instance whose exit it covers, curID its id.
	cur   Instance
	curID string
	// anyExit: every exit restarts ("always"); otherwise a non-zero one.
	anyExit bool
	next    pendingStart
	// reported is closed once a claim is over, claimed or declined.
	reported chan struct{}
	// The claim's outcome, set before reported is closed.
	exit core.ExitedInput
	done startDoneInput
	// stepped says the worker has stepped the outcome (worker only).
	stepped bool
}

// armSlot is where an instance's OnExit finds its arm, if any.
// restartsAtOnce is its start request's: false spares tryArm the core's
// question (a walk of the group's processes) for every other start.
type armSlot struct {
	arm            atomic.Pointer[armedRestart]
	restartsAtOnce bool
}

// pendingStart is one instance's start request with what its exit needs:
// the order of its start and exit in the mailbox, and its arm slot.
type pendingStart struct {
	req   StartRequest
	order *startExitOrder
	slot  *armSlot
}

// claimedInput carries a claimed arm's outcome through the mailbox, for
// the case no disarm took it first.
type claimedInput struct{ arm *armedRestart }

// newPendingStart makes the start request of instance id of process ps.
func (w *worker) newPendingStart(id string, ps spec.Process) pendingStart {
	order := &startExitOrder{}
	slot := &armSlot{restartsAtOnce: w.core.RestartsAtOnce(ps.Name)}
	g := w.core.Spec()
	req := StartRequest{
		Group: w.name, InstanceID: id, Sandbox: g.Sandbox,
		Volumes: g.Volumes, VolumeMounts: g.VolumeMounts(), FSGroup: g.FSGroup,
		// The process as it starts: its group's security context under its own.
		Process: spec.WithGroupSecurity(&g, ps),
		OnExit: func(st lifecycle.ExitStatus) {
			in := core.ExitedInput{Instance: id, Status: st, At: w.clock.Now()}
			if a := slot.arm.Load(); a != nil && w.claim(a, in) {
				return
			}
			order.exited(w.mb, in)
		},
		Report:         func(e lifecycle.RuntimeEvent) { w.mb.put(core.RuntimeEventInput{Event: e}) },
		RestartsAtOnce: slot.restartsAtOnce,
	}
	return pendingStart{req: req, order: order, slot: slot}
}

// claim carries out a, on the reaper's goroutine, for the exit in; false
// sends the exit the usual way.
func (w *worker) claim(a *armedRestart, in core.ExitedInput) bool {
	if !a.anyExit && in.Status.Code == 0 {
		return false // "on-failure": a clean exit is not restarted
	}
	if !a.state.CompareAndSwap(armArmed, armClaiming) {
		return false // disarmed: the worker decides
	}
	tc, ok := a.cur.(TreeChecker)
	if !ok || !tc.TreeEmpty() {
		a.settle(armDeclined) // something to kill first: the usual way
		return false
	}
	inst, err := w.rt.Start(WithoutWaiting(w.ctx), a.next.req)
	if errors.Is(err, ErrWouldWait) {
		a.settle(armDeclined)
		return false
	}
	a.exit = in
	a.done = startDoneInput{instance: a.next.req.InstanceID, inst: inst, err: err}
	a.settle(armClaimed)
	// The new instance's own exit may only follow this in the mailbox.
	a.next.order.started(w.mb, claimedInput{a})
	return true
}

// settle ends a claim in state s.
func (a *armedRestart) settle(s int32) {
	a.state.Store(s)
	close(a.reported)
}

// tryArm arms instance id's next start when the core can decide it now.
func (w *worker) tryArm(id string) {
	if w.arms[id] != nil {
		return
	}
	if w.holdArms {
		// A claimed restart stepped while disarmAll takes the arms back,
		// before the input that made it: armed, if at all, after that.
		w.rearm = append(w.rearm, id)
		return
	}
	slot, inst := w.slots[id], w.insts[id]
	if slot == nil || inst == nil || !slot.restartsAtOnce {
		return
	}
	if _, ok := inst.(TreeChecker); !ok {
		return // it could never be claimed
	}
	next, ps, anyExit, ok := w.core.ArmedRestart(id)
	if !ok {
		return
	}
	a := &armedRestart{cur: inst, curID: id, anyExit: anyExit, next: w.newPendingStart(next, ps), reported: make(chan struct{})}
	w.arms[id] = a
	slot.arm.Store(a)
}

// disarm takes a back before the worker steps something that could
// change its decision. A claim that came first is stepped first.
func (w *worker) disarm(id string) {
	a := w.arms[id]
	if a == nil {
		return
	}
	delete(w.arms, id)
	if a.state.CompareAndSwap(armArmed, armDisarmed) {
		return
	}
	<-a.reported // a claim under way: a check and a fork
	if a.state.Load() == armClaimed {
		w.stepClaimed(a)
	}
}

// disarmAll disarms every arm of the group and notes them, to be armed
// again after the step if the core still agrees.
func (w *worker) disarmAll() {
	w.holdArms = true
	for id := range w.arms {
		w.rearm = append(w.rearm, id)
		w.disarm(id)
	}
	w.holdArms = false
}

// rearmAll arms again what disarmAll took back, where it still applies.
func (w *worker) rearmAll() {
	for _, id := range w.rearm {
		w.tryArm(id)
	}
	clear(w.rearm)
	w.rearm = w.rearm[:0]
}

// stepClaimed steps a claimed arm's outcome, once: the exit, whose step
// must ask for the armed start, then the start's outcome.
func (w *worker) stepClaimed(a *armedRestart) {
	if a.stepped {
		return
	}
	a.stepped = true
	delete(w.arms, a.curID)
	id := a.next.req.InstanceID
	w.claimed[id] = a
	w.stepInput(a.exit)
	if w.claimed[id] != nil {
		// The core did not ask for it: never expected (ArmedRestart
		// answered for this state), but an instance must not run unknown.
		delete(w.claimed, id)
		w.log.Error().Str("instance", id).Msg("an armed restart was not the core's decision after the exit; stopping the instance it started")
		if a.done.err == nil {
			_ = a.done.inst.KillTree(syscall.SIGKILL)
			_ = a.done.inst.Remove()
		}
		return
	}
	w.stepInput(a.done)
}

// disarms reports whether stepping in may change what ArmedRestart
// answered (core.MayChangeArmedRestart); the worker's own inputs do not.
func disarms(in any) bool {
	switch in := in.(type) {
	case startDoneInput:
		return false
	case core.Input:
		return core.MayChangeArmedRestart(in)
	}
	return true
}
