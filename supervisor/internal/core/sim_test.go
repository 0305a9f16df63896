package core

import (
	"reflect"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/internal/coresim"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// This file drives the pure core in a discrete-event simulation: scripted
// processes exit after scripted durations, the clock jumps from one event
// to the next, and every start time is recorded exactly. It is the
// worker's loop without goroutines: start feeds "started" back at once,
// exits and timers arrive as inputs at their instants.

// How simulated instances behave is shared with the supervisor's worker
// tests (package coresim).
type (
	simRun    = coresim.Run
	simScript = coresim.Script
)

type simEvent struct {
	at  time.Duration
	seq int
	in  Input
}

type sim struct {
	t      *testing.T
	core   *Group
	epoch  time.Time
	now    time.Time
	wake   time.Time
	script simScript
	// preStop scripts pre_stop hook durations per process; absent: hangs.
	preStop map[string]time.Duration

	pending []simEvent
	seq     int
	alive   map[string]simRun // instance → its script
	pids    int

	starts    map[string][]time.Duration
	events    []lifecycle.Event
	signals   []simAt
	kills     []simAt
	criticals []CriticalAction
	snapshots []lifecycle.GroupStatus
	// published is the status as a worker publishes it (SnapshotSince
	// its last), checked against Snapshot after every feed.
	published *Published
	// armed is what ArmedRestart answered for each running instance, kept
	// and taken back as the worker keeps and disarms its arms; every
	// covered exit is checked against it (checkArmed).
	armed map[string]simArm
	// armedExits counts the exits an arm covered.
	armedExits int
}

type simAt struct {
	at      time.Duration
	process string
}

func newSim(t *testing.T, g spec.Group, b spec.Backoff, minGrace time.Duration, script simScript) *sim {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatalf("invalid group: %v", err)
	}
	s := &sim{
		t: t, epoch: clock.Epoch, now: clock.Epoch, script: script,
		core:    NewGroup(Config{Group: g, Backoff: b, MinimumGrace: minGrace}),
		preStop: map[string]time.Duration{},
		alive:   map[string]simRun{}, starts: map[string][]time.Duration{},
		armed: map[string]simArm{},
	}
	return s
}

// simArm is an ArmedRestart answer the simulation holds, as the worker
// holds an arm.
type simArm struct {
	next    string
	spec    spec.Process
	anyExit bool
}

// stepArmed steps the core with in as the worker does with arms (R8): an
// input that may change an answer takes every arm back first and arms
// again after; an exit an arm covers must be followed, in the same step,
// by the start of the armed instance with the armed spec, since the
// reaper has started it already.
func (s *sim) stepArmed(in Input) Plan {
	var rearm []string
	if MayChangeArmedRestart(in) {
		for id := range s.armed {
			rearm = append(rearm, id)
		}
		clear(s.armed)
	}
	ex, exited := in.(ExitedInput)
	a, armed := s.armed[ex.Instance]
	covered := exited && armed && (a.anyExit || ex.Status.Code != 0)
	if exited {
		delete(s.armed, ex.Instance)
	}
	p := s.core.Step(s.now, in)
	if covered {
		s.armedExits++
		found := false
		for _, act := range p.Actions {
			if st, ok := act.(StartAction); ok && st.Instance == a.next {
				found = true
				if !reflect.DeepEqual(st.Spec, a.spec) {
					s.t.Errorf("at %s: R8: armed start of %s with spec %+v, the core started %+v", s.elapsed(), a.next, a.spec, st.Spec)
				}
			}
		}
		if !found {
			s.t.Errorf("at %s: R8: the exit of %s was armed to start %s at once, but the core's plan is %+v", s.elapsed(), ex.Instance, a.next, p.Actions)
		}
	}
	if st, ok := in.(StartedInput); ok {
		rearm = append(rearm, st.Instance)
	}
	for _, id := range rearm {
		if next, ps, anyExit, ok := s.core.ArmedRestart(id); ok {
			s.armed[id] = simArm{next: next, spec: ps, anyExit: anyExit}
		}
	}
	return p
}

func (s *sim) elapsed() time.Duration { return s.now.Sub(s.epoch) }

func (s *sim) schedule(after time.Duration, in Input) {
	s.seq++
	s.pending = append(s.pending, simEvent{at: s.elapsed() + after, seq: s.seq, in: in})
}

// feed steps the core with in at the current time and plays the plan.
func (s *sim) feed(in Input) {
	queue := []Input{in}
	for len(queue) > 0 {
		p := s.stepArmed(queue[0])
		queue = queue[1:]
		s.wake = p.Wake
		for _, a := range p.Actions {
			if fb := s.exec(a); fb != nil {
				queue = append(queue, fb)
			}
		}
	}
	snap := s.core.Snapshot()
	s.snapshots = append(s.snapshots, snap)
	s.published = s.core.SnapshotSince(s.published)
	if pub := s.published.Status(); !reflect.DeepEqual(pub, snap) {
		s.t.Fatalf("at %s SnapshotSince the last published status is\n%+v\nSnapshot is\n%+v", s.elapsed(), pub, snap)
	}
}

func (s *sim) exec(a Action) Input {
	switch a := a.(type) {
	case StartAction:
		n := len(s.starts[a.Process])
		s.starts[a.Process] = append(s.starts[a.Process], s.elapsed())
		run := s.script(a.Process, n)
		s.alive[a.Instance] = run
		if run.RunFor >= 0 {
			s.schedule(run.RunFor, ExitedInput{Instance: a.Instance, Status: lifecycle.ExitStatus{Code: run.Code}})
		}
		if run.LivenessFailAfter > 0 {
			s.schedule(run.LivenessFailAfter, ProbeInput{Instance: a.Instance, Probe: spec.Liveness, Message: "scripted"})
		}
		s.pids++
		return StartedInput{Instance: a.Instance, Pid: 1000 + s.pids}
	case SignalAction:
		s.signals = append(s.signals, simAt{s.elapsed(), a.Process})
		if run, ok := s.alive[a.Instance]; ok && !run.IgnoreTerm {
			s.exitEarly(a.Instance, run.TermExit, lifecycle.ExitStatus{Code: 128 + int(a.Sig), Signal: a.Sig})
		}
	case KillTreeAction:
		if _, ok := s.alive[a.Instance]; ok {
			s.kills = append(s.kills, simAt{s.elapsed(), a.Process})
			s.exitEarly(a.Instance, 0, lifecycle.ExitStatus{Code: 137, Signal: syscall.SIGKILL})
		}
	case PreStopAction:
		if d, ok := s.preStop[a.Process]; ok {
			s.schedule(d, PreStopDoneInput{Instance: a.Instance})
		}
	case EmitAction:
		s.events = append(s.events, a.Event)
		if a.Event.Reason == lifecycle.EventInternalError {
			s.t.Errorf("at %s: %s", s.elapsed(), a.Event.Message) // a transition the table does not allow
		}
	case CriticalAction:
		s.criticals = append(s.criticals, a)
	}
	return nil
}

// exitEarly moves an instance's exit to after d unless it exits sooner.
func (s *sim) exitEarly(id string, d time.Duration, st lifecycle.ExitStatus) {
	at := s.elapsed() + d
	for i, e := range s.pending {
		if ex, ok := e.in.(ExitedInput); ok && ex.Instance == id {
			if e.at <= at {
				return
			}
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			break
		}
	}
	s.schedule(d, ExitedInput{Instance: id, Status: st})
}

// runUntil advances the simulation to end, handling every input on the way.
func (s *sim) runUntil(end time.Duration) {
	if s.elapsed() == 0 && len(s.snapshots) == 0 {
		s.feed(TimerInput{}) // the worker's first reconcile
	}
	for steps := 0; steps < 100000; steps++ {
		sort.SliceStable(s.pending, func(i, j int) bool {
			if s.pending[i].at != s.pending[j].at {
				return s.pending[i].at < s.pending[j].at
			}
			return s.pending[i].seq < s.pending[j].seq
		})
		next := time.Duration(-1)
		if len(s.pending) > 0 {
			next = s.pending[0].at
		}
		timer := !s.wake.IsZero() && (next < 0 || s.wake.Sub(s.epoch) < next)
		if timer {
			next = s.wake.Sub(s.epoch)
		}
		if next < 0 || next > end {
			s.now = s.epoch.Add(end)
			return
		}
		if s.now.After(s.epoch.Add(next)) {
			s.t.Fatalf("simulation went back in time: now %s, next %s", s.elapsed(), next)
		}
		s.now = s.epoch.Add(next)
		if timer {
			s.wake = time.Time{}
			s.feed(TimerInput{})
			continue
		}
		e := s.pending[0]
		s.pending = s.pending[1:]
		if ex, ok := e.in.(ExitedInput); ok {
			ex.At = s.now
			delete(s.alive, ex.Instance)
			e.in = ex
		}
		s.feed(e.in)
	}
	s.t.Fatal("simulation did not settle")
}

func (s *sim) command(kind CommandKind, process string, grace *time.Duration, by string) {
	s.feed(CommandInput{Kind: kind, Process: process, Grace: grace, By: by})
}

func (s *sim) eventsWith(reason string) []lifecycle.Event {
	var out []lifecycle.Event
	for _, e := range s.events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (s *sim) status(process string) lifecycle.ProcessStatus {
	ps, ok := s.core.Snapshot().Process(process)
	if !ok {
		s.t.Fatalf("no status for %q", process)
	}
	return ps
}

var (
	secs          = coresim.Secs
	assertTimes   = coresim.AssertTimes
	oneProcess    = coresim.OneProcess
	constant      = coresim.Constant
	appAndSidecar = coresim.AppAndSidecar
	scaled        = coresim.Scaled
)
