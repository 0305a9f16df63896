package probes

import (
	"context"
	"time"

	"github.com/podsup/podsup/spec"
)

// Instance is what the supervisor knows about one run of the probed process.
// The worker reads the latest one at every tick (Worker.Observe).
type Instance struct {
	// ID names one run of the process; every start gets a new one. ""
	// means no instance exists yet, and the worker waits.
	ID string
	// Running is true from the start until the exit is known.
	Running bool
	// StartedAt is when the instance started, read from the worker's
	// clock (monotonic), for the initial delay (P3).
	StartedAt time.Time
	// Started is P5's flag: true once the startup probe has published
	// Success for this instance, or at once when there is no startup probe.
	Started bool
	// Final says the instance has exited and none will follow (restart
	// policy never, or the group is done): the worker ends (P8).
	Final bool
	// GroupStopping says the supervisor is stopping the group for good:
	// liveness and startup publish Success and end so shutdown is quiet
	// (P9). Readiness goes on probing.
	GroupStopping bool
}

// Update is a published result: a change of the probe's value for one
// instance. Workers publish only on change (P6): per instance, the first
// Update is always P4's initial value, marked Initial.
type Update struct {
	Kind       spec.ProbeKind
	InstanceID string
	Result     Result
	// Message and Output come from the probe that decided the result
	// (empty for Initial and for non-running instances' Failure).
	Message string
	Output  []byte
	// Initial marks P4's reset on a new instance: no probe ran.
	Initial bool
	// Time is the worker clock's reading at the tick that published it.
	Time time.Time
	// Duration is how long the probe took, retries included (Report
	// only: podsup_probe_duration_seconds).
	Duration time.Duration
}

// maxProbeRetries is how often a step re-runs a handler that returned an
// error before giving the tick up (kubelet's prober; P10 [mem]).
const maxProbeRetries = 3

// initialResult is P4's value for a new instance.
func initialResult(k spec.ProbeKind) Result {
	switch k {
	case spec.Readiness:
		return Failure
	case spec.Liveness:
		return Success
	default:
		return Unknown
	}
}

// stepper is one worker's decision state. doProbe is kubelet's
// worker.doProbe with the handler, the clock reading and the instance passed
// in: no goroutines, no timers, so tests drive it directly.
type stepper struct {
	kind    spec.ProbeKind
	probe   spec.Probe // D1 defaults applied
	handler Handler
	publish func(Update)
	// onError, when set, hears prober errors (results that were discarded).
	onError func(error)
	// report, when set, hears every counted probe outcome (WorkerConfig.Report).
	report func(Update)

	instanceID string
	published  Result // last value published for instanceID
	lastResult Result // of the current run of identical results
	resultRun  int    // length of that run (P6)
	onHold     bool   // P7: no probing until a new instance
}

func newStepper(kind spec.ProbeKind, p spec.Probe, h Handler, publish func(Update)) *stepper {
	return &stepper{kind: kind, probe: p.WithDefaults(), handler: h, publish: publish}
}

// doProbe runs one tick for inst at now. It returns false when the worker
// should end (P8, P9).
func (s *stepper) doProbe(ctx context.Context, now time.Time, inst Instance) (keepGoing bool) {
	if inst.ID == "" {
		return true // nothing to probe yet
	}
	if inst.ID != s.instanceID {
		// P4: a new instance starts from the kind's initial value and
		// clears the hold (P7). The run counter restarts too: results of
		// the previous instance say nothing about this one.
		s.instanceID = inst.ID
		s.onHold = false
		s.lastResult, s.resultRun = Unknown, 0
		s.published = initialResult(s.kind)
		s.publish(Update{Kind: s.kind, InstanceID: inst.ID, Result: s.published, Initial: true, Time: now})
	}
	if s.onHold {
		return true // P7
	}
	if !inst.Running {
		// P8: a process that is not running fails its probes; the worker
		// ends when no instance will follow.
		s.set(now, Detail{Result: Failure, Message: "process is not running"})
		return !inst.Final
	}
	if inst.GroupStopping && (s.kind == spec.Liveness || s.kind == spec.Startup) {
		s.set(now, Detail{Result: Success}) // P9
		return false
	}
	if now.Sub(inst.StartedAt) < s.probe.InitialDelay {
		return true // P3
	}
	if inst.Started {
		if s.kind == spec.Startup {
			return true // P5: the startup probe is done for this instance
		}
	} else if s.kind != spec.Startup {
		return true // P5: liveness and readiness wait for the start
	}

	began := time.Now() // the real time the probe takes, whatever the worker's clock
	d, err := s.run(ctx)
	took := time.Since(began)
	if err != nil {
		// P10: the prober broke; the result is discarded, not counted
		// toward a threshold. Report hears it as Unknown, as kubelet's
		// prober_probe_total counts it.
		if s.onError != nil {
			s.onError(err)
		}
		if s.report != nil {
			s.report(Update{Kind: s.kind, InstanceID: s.instanceID, Result: Unknown, Message: err.Error(), Time: now, Duration: took})
		}
		return true
	}
	if d.Result == Unknown {
		d.Result = Failure // kubelet's prober maps an error-free Unknown to Failure
	}
	if s.report != nil {
		s.report(Update{Kind: s.kind, InstanceID: s.instanceID, Result: d.Result, Message: d.Message, Output: d.Output, Time: now, Duration: took})
	}

	if d.Result == s.lastResult {
		s.resultRun++
	} else {
		s.lastResult, s.resultRun = d.Result, 1
	}
	if (d.Result == Failure && s.resultRun < s.probe.FailureThreshold) ||
		(d.Result == Success && s.resultRun < s.probe.SuccessThreshold) {
		return true // P6: below its threshold, the published value stands
	}
	s.set(now, d)
	if d.Result == Failure && (s.kind == spec.Liveness || s.kind == spec.Startup) {
		// P7: the supervisor will kill this instance; probing it further
		// would only race the kill.
		s.onHold = true
		s.resultRun = 0
	}
	return true
}

// run calls the handler, retrying prober errors (not failures).
func (s *stepper) run(ctx context.Context) (Detail, error) {
	var (
		d   Detail
		err error
	)
	for i := 0; i < maxProbeRetries; i++ {
		d, err = probeDetail(ctx, s.handler)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	return d, err
}

// set publishes d for the current instance if its result differs from the
// published one.
func (s *stepper) set(now time.Time, d Detail) {
	if d.Result == s.published {
		return
	}
	s.published = d.Result
	s.publish(Update{Kind: s.kind, InstanceID: s.instanceID, Result: d.Result, Message: d.Message, Output: d.Output, Time: now})
}
