package supervisor

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/podsup/podsup/supervisor/internal/core"
	"github.com/podsup/podsup/supervisor/lifecycle"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// worker is the one goroutine that owns a group's state. It waits on its
// mailbox and one timer, steps the core with each input and carries out
// the plan (the executor). It never waits for anything that may be slow:
// only the stop signal (a pidfd send) runs inline; starts (which may
// create the group's sandbox) and tree kills (which wait until a cgroup
// is empty) run as effects in goroutines of their own, and hooks likewise;
// each reports back through the mailbox. So a stop request or a status
// read is never stuck behind a start or a kill.
type worker struct {
	name  string
	spec  spec.Group
	core  *core.Group
	clock clock.Clock
	rt    Runtime
	hooks HookRunner
	bus   *eventBus
	log   zerolog.Logger
	mb    *mailbox
	// ctx is handed to the runtime and hooks; it ends when the worker does.
	ctx    context.Context
	cancel context.CancelFunc
	// onCritical is told about X11 exits; it must not block.
	onCritical func(group, process string, code int)
	// onStatus is told that a new snapshot was stored; it must not block.
	onStatus func()

	insts map[string]Instance
	// slots are the running instances' arm slots, arms their armed
	// restarts, claimed the starts the reaper made of them that the core
	// has not asked for yet (by the new instance's id), and rearm the arms
	// a step took back, to be armed again after it (armed.go).
	slots   map[string]*armSlot
	arms    map[string]*armedRestart
	claimed map[string]*armedRestart
	rearm   []string
	// holdArms defers tryArm to rearmAll while disarmAll runs.
	holdArms bool
	// effects counts start and kill goroutines whose result the worker
	// has not yet handled; starting holds the cancel of each start's ctx.
	effects  int
	starting map[string]context.CancelFunc
	// cleaning holds, per process, the end of the tree kill that follows
	// its last instance's exit: the next start waits for it, so that what
	// the old instance left is killed before a new one may share its
	// cgroup (X10).
	cleaning map[string]chan struct{}
	// cleanups are the post-exit tree kills of the step under way, per
	// process, not yet begun: a start of the same process in the same step
	// (a restart without back-off) runs its process's first, on its own
	// goroutine; the rest begin on goroutines of their own when the step's
	// actions are done (beginCleanups).
	cleanups map[string]cleanup
	// barriers wait for the mailbox to be empty with no effect in flight.
	barriers []barrierInput
	// events waits for the end of handle: a subscriber who sees an event
	// finds Status at least as new as it.
	events []lifecycle.Event
	// unpublished says that a batch's status and events are held back
	// (publishBatch); publishArmed that a publishInput is on its way.
	unpublished, publishArmed bool
	timer                     clock.Timer
	wake                      time.Time
	status                    atomic.Pointer[core.Published]
	// recreates is the group's recreate requests, published with status.
	recreates atomic.Pointer[[]lifecycle.RecreateStatus]
	registry  *recreateRegistry
	// after, when set, holds the worker back until the group it replaces
	// has stopped (Apply); waiting is true meanwhile.
	after   <-chan struct{}
	waiting atomic.Bool
	done    chan struct{}
	// lc runs hooks and probe workers.
	lc hookExec
	// deps carries the group's DepState to related groups (W1, W8).
	deps *depHub
	// probeStats counts the probes that ran (Supervisor.ProbeStats).
	probeStats *probeStats
}

func newWorker(c core.Config, s *Supervisor) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{
		name:       c.Group.Name,
		spec:       c.Group,
		core:       core.NewGroup(c),
		clock:      s.clock,
		rt:         s.rt,
		hooks:      s.hooks,
		bus:        s.bus,
		log:        s.log.With().Str("group", c.Group.Name).Logger(),
		mb:         newMailbox(),
		ctx:        ctx,
		cancel:     cancel,
		onCritical: s.criticalExit,
		onStatus:   s.statusChanged,
		insts:      map[string]Instance{},
		slots:      map[string]*armSlot{},
		arms:       map[string]*armedRestart{},
		claimed:    map[string]*armedRestart{},
		starting:   map[string]context.CancelFunc{},
		cleaning:   map[string]chan struct{}{},
		cleanups:   map[string]cleanup{},
		done:       make(chan struct{}),
		registry:   &s.rc,
		deps:       &s.deps,
		probeStats: &s.probeStats,
	}
	w.status.Store(w.core.SnapshotSince(nil))
	return w
}

// run is the worker's loop. It returns once podsup is shutting down and no
// instance of the group is alive.
func (w *worker) run() {
	defer close(w.done)
	// Release per-group resources (a sandbox) before done closes, so a
	// replacement group waiting on done can take the same name.
	defer w.rt.ReleaseGroup(w.name)
	// Nothing is armed by now (a shutdown disarms and arms nothing); this
	// only makes sure no reaper starts anything in a group being released.
	defer w.disarmAll()
	defer w.cancel()
	if w.after != nil {
		<-w.after
		w.waiting.Store(false)
	}
	w.startProbes()
	defer w.stopProbes() // before cancel: probe commands end with their workers
	// Requests queued before Run (a stop, a shutdown) apply before the
	// first reconcile starts the group.
	var barriers []barrierInput
	for _, in := range w.mb.drain() {
		if b, ok := in.(barrierInput); ok {
			barriers = append(barriers, b)
			continue
		}
		w.handle(in)
	}
	w.handle(core.TimerInput{})
	w.drainMailbox(barriers)
	for !(w.core.ShuttingDown() && w.core.Idle() && w.hooksIdle() && w.effects == 0) {
		var timerC <-chan time.Time
		if w.timer != nil && !w.wake.IsZero() {
			timerC = w.timer.C()
		}
		fired := false
		select {
		case <-w.mb.ready:
		case <-timerC:
			fired = true
		}
		// A timer that fired while we were busy counts too (the fake
		// clock fires into a buffered channel).
		if !fired && timerC != nil {
			select {
			case <-timerC:
				fired = true
			default:
			}
		}
		if fired {
			w.wake = time.Time{}
			w.handle(core.TimerInput{})
		}
		w.drainMailbox(nil)
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.unpublished {
		w.publish()
	}
}

// drainMailbox handles every queued input, including those that handling
// posts (an exit caused by a SIGKILL, say), and only then answers the
// barriers met on the way: a barrier means "all that was queued before me,
// and all that it caused, is done", so it also waits for the effects in
// flight (a start, a kill) to have reported back.
func (w *worker) drainMailbox(barriers []barrierInput) {
	w.barriers = append(w.barriers, barriers...)
	for {
		items := w.mb.drain()
		if len(items) == 0 {
			break
		}
		due := false
		for _, in := range items {
			switch in := in.(type) {
			case barrierInput:
				w.barriers = append(w.barriers, in)
			case publishInput:
				w.publishArmed, due = false, true
			default:
				w.step(in)
			}
		}
		w.mb.recycle(items)
		// Once per batch, not per input: a snapshot is O(processes), and
		// 10,000 processes exiting at once would make it O(n²).
		w.publishBatch(due)
	}
	if w.effects > 0 {
		return // answered once the effects' results are handled
	}
	if w.unpublished && len(w.barriers) > 0 {
		w.publish() // a barrier's caller finds all of it in the status
	}
	for _, b := range w.barriers {
		close(b.done)
	}
	w.barriers = nil
}

// shutdownPublishLag is how long a worker whose group is shutting down
// may hold its status and events back, so that one publication covers
// the batches of that time. In a stop, every exit is a batch of its own
// (the reaper hands them on one at a time), and each batch's snapshot is
// O(processes of the group): publishing each made the snapshots a sixth
// of podsup's CPU in a stop of 10,000 processes (docs/benchmarks.md).
// Outside a shutdown every batch is published at once; in one, the
// status is at most this late, events keep the time they happened at,
// and a barrier (and the group's end) publishes what is held first.
const shutdownPublishLag = 2 * time.Millisecond

// publishInput tells a worker that its held publication is due.
type publishInput struct{}

// publishBatch publishes after a batch of inputs, or, while the group
// shuts down and has instances left, holds the publication back for up
// to shutdownPublishLag (due: that time is up).
func (w *worker) publishBatch(due bool) {
	if due || !w.core.ShuttingDown() || w.core.Idle() {
		w.publish()
		return
	}
	w.syncLifecycle()
	w.unpublished = true
	if !w.publishArmed {
		w.publishArmed = true
		time.AfterFunc(shutdownPublishLag, func() { w.mb.put(publishInput{}) })
	}
}

// handle steps the core with in (step) and publishes the outcome (publish).
func (w *worker) handle(in any) {
	w.step(in)
	w.publish()
}

// step steps the core with item: a claimed restart's outcome, or an input,
// which first takes back the arms it could make wrong (armed.go).
func (w *worker) step(item any) {
	if c, ok := item.(claimedInput); ok {
		w.stepClaimed(c.arm)
		return
	}
	if ex, ok := item.(core.ExitedInput); ok {
		w.disarm(ex.Instance) // its exit went the usual way
	} else if disarms(item) {
		w.disarmAll()
		defer w.rearmAll()
	}
	w.stepInput(item)
}

// stepInput steps the core with item, executes the plan and re-arms the
// timer.
func (w *worker) stepInput(item any) {
	w.noteInput(item)
	in := w.effectDone(item)
	for {
		now := w.clock.Now()
		ex, exited := in.(core.ExitedInput)
		var exitedProcess string // the exit's process, while the core still knows its instance
		if exited {
			if pr, live := w.core.InstanceSpec(ex.Instance); live {
				exitedProcess = pr.Name
			}
		}
		p := w.core.Step(now, in)
		for _, a := range p.Actions {
			w.exec(a)
		}
		w.beginCleanups()
		if exited {
			delete(w.insts, ex.Instance)
			delete(w.slots, ex.Instance)
			if exitedProcess != "" {
				// After the actions: a restart need not wait for the write.
				w.logExit(exitedProcess, ex, w.core.EndReason(ex.Instance))
			}
		}
		if st, ok := in.(core.StartedInput); ok {
			w.tryArm(st.Instance)
		}
		// The core never asks for a wake-up in the past, but if it did,
		// step again now rather than lose it.
		if p.Wake.IsZero() || p.Wake.After(w.clock.Now()) {
			w.arm(p.Wake)
			return
		}
		in = core.TimerInput{}
	}
}

// publish brings the probes and hooks in line with the core, then publishes
// a status snapshot and the events of the steps since the last publish.
func (w *worker) publish() {
	w.unpublished = false
	w.syncLifecycle()
	// The same snapshot again when nothing in it changed: readers may
	// hold the last one, which is never written to.
	w.status.Store(w.core.SnapshotSince(w.status.Load()))
	rs := w.core.RecreateSnapshot()
	w.recreates.Store(&rs)
	w.onStatus()
	for _, e := range w.events {
		w.bus.publish(e)
	}
	// The room is kept for the next step's few events; a burst's (a group
	// of a thousand starting) is not kept for the group's life.
	if cap(w.events) > keptEventRoom {
		w.events = nil
	} else {
		clear(w.events)
		w.events = w.events[:0]
	}
	// After the events: a dependent's Started follows its dependency's
	// Ready in the event stream too.
	w.deps.publish(w, w.core.DepState())
}

// keptEventRoom is how many events' room a worker keeps between steps.
const keptEventRoom = 16

func (w *worker) arm(wake time.Time) {
	if wake.Equal(w.wake) {
		return
	}
	w.wake = wake
	if w.timer != nil {
		if !w.timer.Stop() {
			select { // drop a fire we no longer want
			case <-w.timer.C():
			default:
			}
		}
	}
	if wake.IsZero() {
		return
	}
	d := wake.Sub(w.clock.Now())
	if w.timer == nil {
		w.timer = w.clock.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
}

// logExit writes an instance's exit to podsup's own log. An exit is no
// event (E2): without this line, podsup's log would say when a process
// started and was stopped but not how it ended.
// A requested stop (reason Stopped: X13) is no failure, whatever its
// exit code: an info line.
func (w *worker) logExit(process string, ex core.ExitedInput, reason string) {
	ev := w.log.Info()
	if ex.Status.Code != 0 && reason != lifecycle.ReasonStopped {
		ev = w.log.Warn()
	}
	ev = ev.Str("process", process).Str("instance", ex.Instance).Int("exit_code", ex.Status.Code)
	if reason != "" {
		ev = ev.Str("reason", reason)
	}
	if ex.Status.Signal != 0 {
		ev = ev.Str("signal", spec.SignalName(ex.Status.Signal))
	}
	if ex.Status.OOMKilled {
		ev = ev.Bool("oom_killed", true)
	}
	ev.Msg("process exited")
}

// exec carries out one action. Its outcome, when the core must hear of
// it, comes back through the mailbox.
func (w *worker) exec(a core.Action) {
	switch a := a.(type) {
	case core.StartAction:
		w.startInstance(a)
	case core.CancelStartAction:
		if cancel := w.starting[a.Instance]; cancel != nil {
			cancel()
		}
	case core.SignalAction:
		if inst := w.insts[a.Instance]; inst != nil {
			if err := inst.Signal(a.Sig); err != nil {
				// Usually the process is already gone; its exit is on the way.
				w.log.Debug().Err(err).Str("process", a.Process).Str("instance", a.Instance).Msg("stop signal not delivered")
			}
		}
	case core.KillTreeAction:
		w.killTree(a)
	case core.PreStopAction:
		w.runPreStop(a)
	case core.HookAction:
		w.runHook(a)
	case core.EmitAction:
		w.events = append(w.events, a.Event)
	case core.CriticalAction:
		w.onCritical(w.name, a.Process, a.Code)
	case core.ReleaseAction:
		w.rt.ReleaseProcess(w.name, a.Process)
	case core.RecreateReplyAction, core.RecreateDoneAction, core.RecreateGoneAction:
		w.execRecreate(a)
	}
}

// startInstance starts an instance in a goroutine of its own: a start may
// create the group's sandbox, which takes a holder's handshake. Its
// outcome comes back as startDoneInput, and the instance's exit goes into
// the mailbox only after it (startExitOrder), so the core hears "started" before
// "exited" whenever the runtime reports the exit (Runtime: also before
// Start returned). This is the one place that order is kept: only the
// worker can order the exit after what it does once Start returned.
func (w *worker) startInstance(a core.StartAction) {
	id := a.Instance
	w.effects++
	if c := w.claimed[id]; c != nil {
		// Started already, on the reaper's goroutine (armed.go): its
		// outcome is stepped next, and the previous instance's cleanup
		// runs on its own goroutine (its tree was seen empty).
		delete(w.claimed, id)
		w.slots[id] = c.next.slot
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.starting[id] = cancel
	ps := w.newPendingStart(id, a.Spec)
	w.slots[id] = ps.slot
	req, order := ps.req, ps.order
	cleaned := w.cleaning[a.Process]
	c, restart := w.cleanups[a.Process]
	delete(w.cleanups, a.Process)
	go func() {
		switch {
		case restart:
			w.cleanUp(c) // the previous instance's leftovers are dead first
		case cleaned != nil:
			<-cleaned // ... killed by a goroutine of an earlier step
		}
		inst, err := w.rt.Start(ctx, req)
		order.started(w.mb, startDoneInput{instance: id, inst: inst, err: err})
	}()
	if restart {
		// The restart path: let the new goroutine have this thread now,
		// rather than after the rest of the step and the publish (status,
		// events, probes), which another thread takes up meanwhile. Waiting
		// for the end of the step was a measurable share of what a restart
		// costs above the fork+exec floor (docs/benchmarks.md, "Figures
		// behind choices in the code").
		runtime.Gosched()
	}
}

// startDoneInput is a start effect's outcome; the worker turns it into
// StartedInput or StartFailedInput.
type startDoneInput struct {
	instance string
	inst     Instance
	err      error
}

// killTree SIGKILLs an instance's tree in a goroutine of its own (a cgroup
// kill waits until the tree is empty, or gives up after a while when a
// task is stuck in the kernel) and reports the outcome as KillDoneInput.
// After the instance's exit the same goroutine then removes it: the worker
// is the one owner of an instance's cleanup. One kill per instance is in
// flight at a time; the core retries on its own deadline.
//
// The kill after an exit waits for the end of the step's actions: when the
// step also restarts the process, the start's goroutine runs it first
// (startInstance), which spares the restart a goroutine and a hand-off.
func (w *worker) killTree(a core.KillTreeAction) {
	inst := w.insts[a.Instance]
	w.effects++
	w.endInstanceHooks(a.Instance) // K9: its hooks go with it
	if inst == nil {
		// Nothing to kill (the core defers stops of starts in flight):
		// answer at once so the core's bookkeeping of kills in flight holds.
		w.mb.put(core.KillDoneInput{Process: a.Process, Instance: a.Instance, Exited: a.Exited})
		return
	}
	// Nothing restarts in a shutdown: the exit's cleanup is the process's
	// last, and a runtime that can may retire it at once.
	c := cleanup{a: a, inst: inst, final: a.Exited && w.core.ShuttingDown()}
	if a.Exited {
		w.cleanups[a.Process] = c
		return
	}
	go w.cleanUp(c)
}

// cleanup is one tree kill, and after an exit the instance's removal.
type cleanup struct {
	a    core.KillTreeAction
	inst Instance
	// cleaned, when set, is closed once it is done, for a start in a
	// later step to wait on.
	cleaned chan struct{}
	// final says the process will not run again (Retirer).
	final bool
}

// beginCleanups begins, each on a goroutine of its own, the post-exit
// kills of the step that no start took on.
func (w *worker) beginCleanups() {
	for process, c := range w.cleanups {
		c.cleaned = make(chan struct{})
		w.cleaning[process] = c.cleaned
		go w.cleanUp(c)
		delete(w.cleanups, process)
	}
}

// cleanUp carries out c and reports it as KillDoneInput. It runs on a
// goroutine of its own, never on the worker's.
func (w *worker) cleanUp(c cleanup) {
	a := c.a
	done := core.KillDoneInput{Process: a.Process, Instance: a.Instance, Exited: a.Exited}
	// A retired instance's tree is known empty, or was killed, and the
	// instance is removed.
	if !c.final || !w.retire(c) {
		if err := c.inst.KillTree(syscall.SIGKILL); err != nil && !treeGone(err) {
			done.Err = err
		} else if a.Exited {
			done.RemoveErr = c.inst.Remove()
		}
	}
	if c.cleaned != nil {
		close(c.cleaned) // before the result: the worker then forgets it
	}
	w.mb.put(done)
}

// retire ends c's instance in one step where its runtime can (Retirer),
// and reports whether it did; a failed Retire leaves the usual kill and
// removal to cleanUp, which report what still fails.
func (w *worker) retire(c cleanup) bool {
	r, ok := c.inst.(Retirer)
	if !ok {
		return false
	}
	if err := r.Retire(); err != nil {
		w.log.Debug().Err(err).Str("process", c.a.Process).Str("instance", c.a.Instance).Msg("retiring the instance failed; killing its tree and removing it")
		return false
	}
	return true
}

// treeGone reports a kill error that only says there was nothing left.
func treeGone(err error) bool {
	return errors.Is(err, proc.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// effectDone books an effect's result and turns it into what the core
// understands.
func (w *worker) effectDone(item any) core.Input {
	switch in := item.(type) {
	case startDoneInput:
		w.effects--
		if cancel := w.starting[in.instance]; cancel != nil {
			cancel()
			delete(w.starting, in.instance)
		}
		if in.err != nil {
			delete(w.slots, in.instance)
			return core.StartFailedInput{Instance: in.instance, Err: in.err, Code: startFailureCode(in.err)}
		}
		w.insts[in.instance] = in.inst
		return core.StartedInput{Instance: in.instance, Pid: in.inst.Pid()}
	case core.KillDoneInput:
		w.effects--
		if c := w.cleaning[in.Process]; in.Exited && c != nil && isDone(c) {
			delete(w.cleaning, in.Process)
		}
		return in
	}
	return item.(core.Input)
}

func (w *worker) runPreStop(a core.PreStopAction) {
	pr, _ := w.core.InstanceSpec(a.Instance)
	w.startHook(pr, a.Instance, spec.PreStop, a.Budget, w.instanceContext(a.Instance))
}

// startExitOrder puts an instance's start outcome and its exit into the
// mailbox in that order, whichever comes first: an exit reaped before its
// Start returned is held and posted with the outcome. Both posts happen
// under mu. Marking Start returned under the lock and posting its outcome
// after it let an exit that came in between reach the mailbox first; the
// core, which had not heard of the start yet, dropped the exit and waited
// for that instance for good (TestRealRestartLoopLosesNoExit).
type startExitOrder struct {
	mu       sync.Mutex
	returned bool // the outcome is posted: exits go straight to the mailbox
	early    *core.ExitedInput
}

// exited posts in, or holds it until the start's outcome is posted.
func (o *startExitOrder) exited(mb *mailbox, in core.ExitedInput) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.returned {
		mb.put(in)
		return
	}
	o.early = &in
}

// started posts the start's outcome, with an exit held meanwhile in the
// same put: the worker never sees the start done without the exit that
// came before it (a barrier between the two would call the worker quiet
// too early).
func (o *startExitOrder) started(mb *mailbox, done any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.returned = true
	if o.early != nil {
		mb.put(done, *o.early)
		return
	}
	mb.put(done)
}

// barrier waits until the worker has handled everything posted so far.
func (w *worker) barrier() {
	b := barrierInput{done: make(chan struct{})}
	w.mb.put(b)
	select {
	case <-b.done:
	case <-w.done:
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
