package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podsup/podsup/supervisor/internal/core"
	"github.com/podsup/podsup/supervisor/lifecycle"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// Options are a Supervisor's dependencies. The zero value of each is
// usable: the real clock, no logging, no hooks.
type Options struct {
	Clock clock.Clock
	// Logger receives one structured line per event, and debug lines for
	// tolerated errors. The zero Logger logs nothing.
	Logger zerolog.Logger
	// Runtime starts and signals processes. Required: the supervisor
	// reaches the kernel only through it (package stack has the real
	// ones: stack.New assembles podsup up's; tests use fakes).
	Runtime Runtime
	// Hooks runs lifecycle hooks; nil means DefaultHookRunner (package
	// hooks, on Clock).
	Hooks HookRunner
	// EventBuffer is how many events a subscriber may fall behind before
	// the oldest are dropped (DefaultEventBuffer when 0).
	EventBuffer int
	// KillRetry is how long after a SIGKILL of an instance's tree that did
	// not end it the kill is tried again, doubling each time up to a
	// minute (lifecycle.DefaultKillRetry when 0). KillAttempts is how many
	// SIGKILLs a shutdown tries before it gives up on an instance whose
	// tree survives them (a task stuck in the kernel), so that it ends
	// (lifecycle.DefaultKillAttempts when 0). A stop that is not a
	// shutdown never gives up.
	KillRetry    time.Duration
	KillAttempts int
}

// Errors returned by the request methods.
var (
	ErrNotFound = errors.New("not found")
	// ErrShuttingDown: podsup is stopping; nothing new starts.
	ErrShuttingDown = core.ErrShuttingDown
	// ErrNotRunning: the supervisor's Run has not started the group (yet).
	ErrNotRunning = errors.New("group is not running")
	ErrRunning    = errors.New("supervisor is already running")
	// ErrNoRuntime is New's error when Options.Runtime is nil.
	ErrNoRuntime = errors.New("unable to supervise: Options.Runtime is nil (stack.New assembles podsup's runtime)")
)

// RequestOptions qualify a start, stop or restart request.
type RequestOptions struct {
	// Grace replaces the grace period of K1 for the stop this request
	// causes (K2); nil keeps K1's choice. K5's minimum still applies.
	Grace *time.Duration
	// Requester names who asked (e.g. "api uid=1000"), for events (X7).
	Requester string
}

// Result is how a Run ended.
type Result struct {
	// ExitCode is podsup's exit code: 0 after a shutdown (X9), the
	// critical process's code after a critical exit (X11).
	ExitCode int
	// Critical is set when a critical process ended podsup.
	Critical *CriticalExit
}

// CriticalExit names the critical process that ended podsup (X11).
type CriticalExit struct {
	Group    string
	Process  string
	ExitCode int
}

// Supervisor runs groups of processes declaratively: one worker goroutine
// per group owns that group's state; requests, exits and timers reach it
// as values.
type Supervisor struct {
	clock      clock.Clock
	log        zerolog.Logger
	rt         Runtime
	hooks      HookRunner
	bus        *eventBus
	minGrace   time.Duration
	defBackoff spec.Backoff
	killRetry  time.Duration
	killTries  int
	rc         recreateRegistry
	deps       depHub
	// probeStats counts the probes that ran (ProbeStats).
	probeStats probeStats

	mu sync.Mutex // guards everything below
	// cfg is the configuration in force, which Reload compares against.
	cfg       spec.Config
	workers   map[string]*worker
	order     []string
	retiring  map[*worker]struct{} // replaced or removed by Apply, still stopping
	running   bool
	shutdowns int
	critical  *CriticalExit
	stopping  chan struct{} // closed by the first shutdown request
	done      chan struct{} // closed when Run has stopped every group
	wg        sync.WaitGroup

	watchMu  sync.Mutex // guards watchers (NotifyStatus)
	watchers map[chan<- struct{}]struct{}
}

var instanceGeneration atomic.Uint64

// New validates cfg and prepares a supervisor for it. Nothing starts
// before Run. A cfg that asks for something opts.Runtime cannot honour (a
// sandbox block without sandboxes: Capabilities) is refused with an error
// that wraps ErrUnsupported and names each such setting.
//
// A cfg.Backoff that is entirely zero means "not set" and takes kubelet's
// defaults (X2: 10s / 5m / 10m); a group's own Backoff is taken literally.
//
// # Process-wide effects
//
// The supervisor itself changes nothing of the process: it reaches the
// kernel only through opts.Runtime. The runtimes of this module
// (hostrt.Runtime, and stack.New's, which podsup up runs) start processes
// with package sandbox/proc, whose first start installs a reaper for the
// whole program: a goroutine that waits for any child (waitid(P_ALL);
// in PID 1 it also catches SIGCHLD), so that nothing else in the program
// may wait for a child from then on (os/exec's Cmd.Wait, Run and Output; start commands
// with proc.Start instead). That first start does not make the program a
// child subreaper: to have orphaned descendants come back to it, to be
// reaped rather than left to the host's init, call
// proc.StartReaperAs(true) before anything starts a process (stack:
// Options.Subreaper). The program's SIGTERM and SIGINT stay its own: a
// program that wants them to stop the supervisor calls Shutdown.
func New(cfg spec.Config, opts Options) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("unable to use the configuration: %w", err)
	}
	if opts.Runtime == nil {
		return nil, ErrNoRuntime
	}
	if err := opts.Runtime.Capabilities().Check(&cfg); err != nil {
		return nil, fmt.Errorf("unable to use the configuration: %w", err)
	}
	if opts.Hooks == nil {
		opts.Hooks = DefaultHookRunner{Clock: opts.Clock}
	}
	s := &Supervisor{
		clock:      clock.Or(opts.Clock),
		log:        opts.Logger,
		rt:         opts.Runtime,
		hooks:      opts.Hooks,
		bus:        newEventBus(opts.Logger, opts.EventBuffer),
		minGrace:   cfg.Supervisor.EffectiveMinimumGrace(),
		defBackoff: cfg.Backoff,
		killRetry:  opts.KillRetry,
		killTries:  opts.KillAttempts,
		cfg:        cfg,
		workers:    map[string]*worker{},
		retiring:   map[*worker]struct{}{},
		stopping:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	if s.defBackoff == (spec.Backoff{}) {
		s.defBackoff = spec.DefaultBackoff()
	}
	for _, g := range cfg.Groups {
		s.workers[g.Name] = newWorker(s.coreConfig(g), s)
		s.order = append(s.order, g.Name)
	}
	s.deps.configure(&s.cfg, s.workers)
	return s, nil
}

func (s *Supervisor) coreConfig(g spec.Group) core.Config {
	gen := instanceGeneration.Add(1)
	return core.Config{
		Group: g, Backoff: s.defBackoff, MinimumGrace: s.minGrace,
		IDPrefix:  g.Name + "." + strconv.FormatUint(gen, 36) + ".",
		KillRetry: s.killRetry, KillAttempts: s.killTries,
		Created: s.clock.Now(),
	}
}

// Run starts every group and supervises them until Shutdown is called,
// ctx ends, or a critical process ends for good (X11). In each case every
// group is stopped in parallel (X9) and Run returns once no process is
// left. Cancelling ctx again cannot speed that up: Shutdown's ctx, or a
// second RequestShutdown, escalates to SIGKILL.
func (s *Supervisor) Run(ctx context.Context) (Result, error) {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return Result{}, ErrRunning
	}
	s.running = true
	for _, name := range s.order {
		s.spawn(s.workers[name])
	}
	s.mu.Unlock()

	select {
	case <-ctx.Done():
		s.beginShutdown()
	case <-s.stopping:
	}
	s.wg.Wait()
	close(s.done)

	s.mu.Lock()
	defer s.mu.Unlock()
	res := Result{}
	if s.critical != nil {
		c := *s.critical
		res.Critical, res.ExitCode = &c, c.ExitCode
	}
	return res, nil
}

// spawn starts w's goroutine; s.mu is held.
func (s *Supervisor) spawn(w *worker) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		w.run()
	}()
}

// Shutdown stops every group, each process gracefully through K1–K6 with
// its group's grace period: dependents before what they depend on (W8),
// or all at once with stop_order = "parallel" (W9). It returns once Run has
// stopped them all and no process is left. When ctx ends first, every
// process still stopping is SIGKILLed at once; Shutdown waits for that
// too and returns ctx's error. A shutdown already under way (Run's ctx,
// RequestShutdown, a critical exit) is joined, not escalated. Before Run
// there is nothing to stop: Shutdown returns nil at once, and a Run called
// later stops at once.
//
// RequestShutdown is the same stop as a request that does not wait, with a
// grace override, and a second request escalating to SIGKILL: what the
// API's shutdown and podsup up's signals use.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	if ctx == nil {
		// Shutdown(nil) is what callers wrote when Shutdown took a grace
		// override and did not wait: it keeps that meaning (a request,
		// the second of which escalates) rather than panic, or block
		// where the old code then called it again.
		s.RequestShutdown(nil)
		return nil
	}
	running := s.beginShutdown()
	if !running {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
	}
	s.RequestShutdown(nil) // a further shutdown request is SIGKILL (X9)
	<-s.done
	return fmt.Errorf("shutting down: %w", ctx.Err())
}

// beginShutdown starts the graceful shutdown unless one is under way, and
// reports whether Run has begun.
func (s *Supervisor) beginShutdown() (running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdowns == 0 {
		s.shutdownLocked(nil, "shutdown")
	}
	return s.running
}

// RequestShutdown asks for the stop Shutdown waits for and returns at
// once: each process through K1–K6 with grace as the override (nil: each
// group's own), in the order of W8 (or W9). A second request stops
// whatever still waits for its dependents at once and escalates every
// process already stopping to SIGKILL (X9). Run returns when everything
// has stopped.
func (s *Supervisor) RequestShutdown(grace *time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdownLocked(grace, "shutdown")
}

func (s *Supervisor) shutdownLocked(grace *time.Duration, by string) {
	s.shutdowns++
	if s.shutdowns == 1 {
		close(s.stopping)
	}
	for name, w := range s.workers {
		w.mb.put(shutdownInput(&s.cfg, name, grace, by)) // W8, W9
	}
	for w := range s.retiring {
		w.mb.put(core.CommandInput{Kind: core.CmdShutdown, Grace: grace, By: by})
	}
}

// criticalExit is X11; called from a worker, it must not block.
func (s *Supervisor) criticalExit(group, process string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.critical != nil || s.shutdowns > 0 {
		return
	}
	s.critical = &CriticalExit{Group: group, Process: process, ExitCode: code}
	s.shutdownLocked(nil, "critical process "+group+"/"+process)
}

// Start starts a stopped group (process "") or process at once, without
// waiting for its back-off (X7). The request is queued; events report
// what happened.
func (s *Supervisor) Start(group, process string, opts RequestOptions) error {
	return s.request(core.CmdStart, group, process, opts)
}

// Stop stops a group (process "": all its processes, in parallel) or one
// process through K1–K6; it stays stopped until started. A second stop of
// a process still stopping SIGKILLs it at once.
func (s *Supervisor) Stop(group, process string, opts RequestOptions) error {
	return s.request(core.CmdStop, group, process, opts)
}

// Restart stops a group's processes (or one process) through K1–K6 and
// starts them again at once: a requested restart is not a crash, so it
// neither waits for nor advances the back-off (X7); the restart count
// still increases (R5).
func (s *Supervisor) Restart(group, process string, opts RequestOptions) error {
	return s.request(core.CmdRestart, group, process, opts)
}

func (s *Supervisor) request(kind core.CommandKind, group, process string, opts RequestOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workers[group]
	if !ok {
		return fmt.Errorf("unable to %s group %q: %w", kind, group, ErrNotFound)
	}
	if process != "" && !w.hasProcess(process) {
		return fmt.Errorf("unable to %s process %q of group %q: %w", kind, process, group, ErrNotFound)
	}
	if s.shutdowns > 0 && kind != core.CmdStop {
		return fmt.Errorf("unable to %s %s: %w", kind, group, ErrShuttingDown)
	}
	by := opts.Requester
	if by == "" {
		by = "library caller"
	}
	w.mb.put(core.CommandInput{Kind: kind, Process: process, Grace: opts.Grace, By: by})
	return nil
}

func (w *worker) hasProcess(name string) bool {
	for _, list := range [][]spec.Process{w.spec.Init, w.spec.Processes} {
		for _, p := range list {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

// Status returns a snapshot of every group, in configuration order.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Groups: make([]lifecycle.GroupStatus, 0, len(s.order))}
	for _, name := range s.order {
		st.Groups = append(st.Groups, s.workers[name].status.Load().Status())
	}
	return st
}

// Publish records an event that no group's worker saw: what podsup found
// at start-up of an earlier podsup's groups (EventRecovered), say. A zero
// Time is now. Subscribers (the event history, `podsup events`) get it
// like any other; call it after they subscribed.
func (s *Supervisor) Publish(e lifecycle.Event) {
	if e.Time.IsZero() {
		e.Time = s.clock.Now()
	}
	s.bus.publish(e)
}

// Subscribe returns a subscription to every event from now on, in order.
// A subscriber that falls DefaultEventBuffer (Options.EventBuffer) events
// behind loses the oldest ones; Dropped counts them. Close it when done.
func (s *Supervisor) Subscribe() *Subscription { return s.bus.subscribe() }

// ProbeResult delivers a changed probe result for one instance of a
// group's process (P6: probe workers publish changes only). It is the
// entry point for probe results: readiness sets ready (P12), startup
// success sets started (P5), and a liveness or startup failure kills the
// instance with the probe's grace (K1.2) and restarts it unless the policy
// is never, with B8's pre-kill back-off check (R4, X4). Results for an
// instance that is no longer current are ignored.
func (s *Supervisor) ProbeResult(group, instanceID string, kind spec.ProbeKind, success bool, message string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workers[group]
	if !ok {
		return fmt.Errorf("unable to deliver a %s probe result to group %q: %w", kind, group, ErrNotFound)
	}
	w.mb.put(core.ProbeInput{Instance: instanceID, Probe: kind, Success: success, Message: message})
	return nil
}

// Config returns the configuration in force: the one New was given, or the
// last Reload's. It shares its slices and pointers with the supervisor,
// which never modifies them (Reload replaces the whole value): the caller
// must not modify them either.
func (s *Supervisor) Config() spec.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}
