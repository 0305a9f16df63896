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
	}
	return s
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
		p := s.core.Step(s.now, queue[0])
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
