package supervisor

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// worker is the one goroutine that owns a group's state. It waits on its
// mailbox and one timer, steps the core with each input and carries out
// the plan (the executor). Start, Signal and KillTree are quick syscalls
// and run inline, so an exit is answered by the next start without another
// goroutine hop; hooks run in goroutines of their own and report back
// through the mailbox.
type worker struct {
	name  string
	spec  spec.Group
	core  *groupCore
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
	// events waits for the end of handle: a subscriber who sees an event
	// finds Status at least as new as it.
	events []Event
	timer  clock.Timer
	wake   time.Time
	status atomic.Pointer[GroupStatus]
	// recreates is the group's recreate requests, published with status.
	recreates atomic.Pointer[[]RecreateStatus]
	registry  *recreateRegistry
	// after, when set, holds the worker back until the group it replaces
	// has stopped (Apply); waiting is true meanwhile.
	after   <-chan struct{}
	waiting atomic.Bool
	done    chan struct{}
	// lc runs hooks and probe workers (hookrun.go, probing.go).
	lc lifecycle
}

func newWorker(c coreConfig, s *Supervisor) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{
		name:       c.group.Name,
		spec:       c.group,
		core:       newGroupCore(c),
		clock:      s.clock,
		rt:         s.rt,
		hooks:      s.hooks,
		bus:        s.bus,
		log:        s.log.With().Str("group", c.group.Name).Logger(),
		mb:         newMailbox(),
		ctx:        ctx,
		cancel:     cancel,
		onCritical: s.criticalExit,
		onStatus:   s.statusChanged,
		insts:      map[string]Instance{},
		done:       make(chan struct{}),
		registry:   &s.rc,
	}
	st := w.core.snapshot()
	w.status.Store(&st)
	return w
}

// run is the worker's loop. It returns once podsup is shutting down and no
// instance of the group is alive.
func (w *worker) run() {
	defer close(w.done)
	// Release per-group resources (a sandbox) before done closes, so a
	// replacement group waiting on done can take the same name.
	defer func() {
		if r, ok := w.rt.(GroupReleaser); ok {
			r.ReleaseGroup(w.name)
		}
	}()
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
	w.handle(timerInput{})
	w.drainMailbox(barriers)
	for !(w.core.shutdown && w.core.idle() && w.hooksIdle()) {
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
			w.handle(timerInput{})
		}
		w.drainMailbox(nil)
	}
	if w.timer != nil {
		w.timer.Stop()
	}
}

// drainMailbox handles every queued input, including those that handling
// posts (an exit caused by a SIGKILL, say), and only then answers the
// barriers met on the way: a barrier means "all that was queued before me,
// and all that it caused, is done".
func (w *worker) drainMailbox(barriers []barrierInput) {
	for {
		items := w.mb.drain()
		if len(items) == 0 {
			break
		}
		for _, in := range items {
			if b, ok := in.(barrierInput); ok {
				barriers = append(barriers, b)
				continue
			}
			w.handle(in)
		}
	}
	for _, b := range barriers {
		close(b.done)
	}
}

// handle steps the core with in, executes the plan, feeds the executor's
// results (started, start failed) back in, then re-arms the timer,
// publishes a status snapshot and then the step's events.
func (w *worker) handle(in input) {
	w.noteInput(in)
	queue := []input{in}
	var wake time.Time
	for len(queue) > 0 {
		in := queue[0]
		queue = queue[1:]
		now := w.clock.Now()
		p := w.core.step(now, in)
		for _, a := range p.actions {
			if fb := w.exec(a); fb != nil {
				queue = append(queue, fb)
			}
		}
		if ex, ok := in.(exitedInput); ok {
			delete(w.insts, ex.instance)
		}
		wake = p.wake
		// The core never asks for a wake-up in the past, but if it did,
		// step again now rather than lose it.
		if len(queue) == 0 && !wake.IsZero() && !wake.After(w.clock.Now()) {
			queue = append(queue, timerInput{})
		}
	}
	w.arm(wake)
	w.syncLifecycle()
	st := w.core.snapshot()
	w.status.Store(&st)
	rs := w.core.recreateSnapshot()
	w.recreates.Store(&rs)
	w.onStatus()
	for _, e := range w.events {
		w.bus.publish(e)
	}
	w.events = w.events[:0]
}

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

// exec carries out one action; it returns the input that reports its
// outcome when the core must hear of it at once.
func (w *worker) exec(a action) input {
	switch a := a.(type) {
	case startAction:
		id := a.instance
		inst, err := w.rt.Start(w.ctx, StartRequest{
			Group: w.name, InstanceID: id, Process: a.spec, Sandbox: w.core.spec.Sandbox,
			OnExit: func(st ExitStatus) {
				w.mb.put(exitedInput{instance: id, status: st, at: w.clock.Now()})
			},
		})
		if err != nil {
			return startFailedInput{instance: id, err: err}
		}
		w.insts[id] = inst
		return startedInput{instance: id, pid: inst.Pid()}
	case signalAction:
		if inst := w.insts[a.instance]; inst != nil {
			if err := inst.Signal(a.sig); err != nil {
				// Usually the process is already gone; its exit is on the way.
				w.log.Debug().Err(err).Str("process", a.process).Str("instance", a.instance).Msg("stop signal not delivered")
			}
		}
	case killTreeAction:
		if inst := w.insts[a.instance]; inst != nil {
			if err := inst.KillTree(syscall.SIGKILL); err != nil {
				w.log.Debug().Err(err).Str("process", a.process).Str("instance", a.instance).Msg("SIGKILL of the process tree not delivered")
			}
		}
	case preStopAction:
		w.runPreStop(a)
	case hookAction:
		w.runHook(a)
	case emitAction:
		w.events = append(w.events, a.event)
	case criticalAction:
		w.onCritical(w.name, a.process, a.code)
	case recreateReplyAction, recreateDoneAction, recreateGoneAction:
		w.execRecreate(a)
	}
	return nil
}

func (w *worker) runPreStop(a preStopAction) {
	var pr spec.Process
	if p := w.core.procByInstance(a.instance); p != nil {
		pr = p.spec
	}
	w.startHook(pr, a.instance, spec.PreStop, a.budget, w.instanceContext(a.instance))
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
