package probes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// WorkerConfig describes one worker: one probe kind of one process (P1).
type WorkerConfig struct {
	Kind spec.ProbeKind
	// Probe's zero fields take D1's defaults. Durations may be finer than
	// a second (D7).
	Probe   spec.Probe
	Handler Handler
	// Publish hears every Update, from the worker's goroutine. It may
	// block (the worker waits), but must not wait for the worker itself.
	Publish func(Update)
	// Report, when set, hears the outcome of every probe that ran (not
	// only changes), from the worker's goroutine, before any Publish it
	// causes: the kubelet records an Unhealthy event for each failed probe,
	// not only for the one that crosses the threshold. A probe whose
	// prober errored (P10) is reported as Unknown. It must not block.
	Report func(Update)
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Logger hears discarded prober errors; zero value is a no-op logger.
	Logger zerolog.Logger
}

// Worker probes one process for one probe kind, across its instances, on
// the probe's period, and publishes results on change (P1–P10).
//
// Lifecycle: NewWorker, Observe the first instance, `go w.Run(ctx)`; Observe
// each change of the process; Stop (or cancel ctx) when the process is gone;
// Done is closed when Run has returned. Between ticks a worker holds one
// timer and a parked goroutine: it costs no CPU.
type Worker struct {
	step     *stepper
	clock    clock.Clock
	instance atomic.Pointer[Instance]
	trigger  chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc // of the running Run, to cut a probe short
}

// NewWorker checks cfg and returns a worker that has not started.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	switch cfg.Kind {
	case spec.Startup, spec.Liveness, spec.Readiness:
	default:
		return nil, fmt.Errorf("unable to create probe worker: unknown probe kind %q", cfg.Kind)
	}
	if cfg.Handler == nil || cfg.Publish == nil {
		return nil, errors.New("unable to create probe worker: Handler and Publish are required")
	}
	p := cfg.Probe.WithDefaults()
	if p.Period <= 0 || p.Timeout <= 0 || p.SuccessThreshold < 1 || p.FailureThreshold < 1 || p.InitialDelay < 0 {
		return nil, fmt.Errorf("unable to create %s probe worker: invalid timing (D3)", cfg.Kind)
	}
	w := &Worker{
		step:    newStepper(cfg.Kind, p, cfg.Handler, cfg.Publish),
		clock:   clock.Or(cfg.Clock),
		trigger: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	w.step.report = cfg.Report
	log := cfg.Logger.With().Str("probe", string(cfg.Kind)).Logger()
	w.step.onError = func(err error) {
		log.Warn().Err(err).Str("instance", w.step.instanceID).Msg("probe errored; result discarded")
	}
	return w, nil
}

// Observe records the latest state of the probed process. The worker reads
// it at its next tick; call Trigger to probe at once.
func (w *Worker) Observe(inst Instance) { w.instance.Store(&inst) }

// Trigger asks for a probe now, without moving the period's phase. It never
// blocks; triggers coalesce.
func (w *Worker) Trigger() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// Stop ends Run, cutting a running probe short. Safe to call many times and
// before Run.
func (w *Worker) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.cancel != nil {
		w.cancel()
	}
}

// Done is closed when Run has returned.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Run probes at once and then every period until Stop, ctx's end, or the
// step says the worker is done (P8, P9). Ticks keep their phase like a
// time.Ticker's, and like one it keeps one pending tick: a probe that ran
// past a tick is followed at once by the next probe, and any further ticks
// it ran past are dropped (P13).
func (w *Worker) Run(ctx context.Context) {
	defer close(w.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.cancel = cancel
	w.mu.Unlock()

	period := w.step.probe.Period
	// next is the ticker's next tick that has not been consumed. A tick
	// consumed moves it to the first boundary after the moment it was
	// consumed; a tick that fell due during a probe is pending (P13).
	next := w.clock.Now().Add(period)
	after := func(now time.Time) time.Time {
		if next.After(now) {
			return next
		}
		return next.Add((now.Sub(next)/period + 1) * period)
	}
	// The timer is armed only after each step, so a tick can never fire
	// (and be dropped below) before the first probe has run.
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for w.tick(ctx) {
		now := w.clock.Now()
		if !next.After(now) {
			// P13: a tick fell due while the probe ran. The kubelet's
			// ticker holds it, and its worker probes again at once; the
			// ticks after it are dropped and the phase is kept.
			next = after(now)
			continue
		}
		if timer == nil {
			timer = w.clock.NewTimer(next.Sub(now))
		} else {
			select { // drop a stale tick: next already accounts for it
			case <-timer.C():
			default:
			}
			timer.Reset(next.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
			next = after(w.clock.Now())
		case <-w.trigger:
		}
	}
}

func (w *Worker) tick(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	var inst Instance
	if p := w.instance.Load(); p != nil {
		inst = *p
	}
	return w.step.doProbe(ctx, w.clock.Now(), inst)
}

// Interval is the worker's effective period (D1 default applied).
func (w *Worker) Interval() time.Duration { return w.step.probe.Period }
