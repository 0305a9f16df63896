package supervisor

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/podsup/podsup/probes"
	"github.com/podsup/podsup/spec"
)

// Probe counts for podsup_probe_total and podsup_probe_duration_seconds
// (kubelet's prober_probe_total and prober_probe_duration_seconds): every
// probe that ran, by outcome, and how long it took. The probe workers count
// from their own goroutines through Report; a scrape reads a copy.

// ProbeDurationBuckets are the upper bounds, in seconds, of the probe
// duration histogram: from a fast tcp_socket probe to an exec probe near
// a long timeout.
var ProbeDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Probe results as kubelet's prober_probe_total labels them.
const (
	ProbeResultSuccessful = "successful"
	ProbeResultFailed     = "failed"
	ProbeResultUnknown    = "unknown"
)

// ProbeStat is what the probes of one kind of one process did since podsup
// started (reloads keep the counts of a process that stays).
type ProbeStat struct {
	Group, Process string
	Kind           spec.ProbeKind
	// Results counts probes by ProbeResult* outcome.
	Results map[string]uint64
	// Count, Sum and Buckets are the duration histogram: Buckets[i]
	// counts the probes that took at most ProbeDurationBuckets[i]
	// (cumulative, as Prometheus's histograms are).
	Count   uint64
	Sum     float64
	Buckets []uint64
}

type probeKey struct {
	group, process string
	kind           spec.ProbeKind
}

// probeStats is the Supervisor's table; its zero value is ready.
type probeStats struct {
	mu sync.Mutex
	m  map[probeKey]*ProbeStat
}

// observe counts one probe that ran. It never blocks for long: a probe
// worker calls it between probes.
func (p *probeStats) observe(group, process string, kind spec.ProbeKind, r probes.Result, d time.Duration) {
	result := ProbeResultUnknown
	switch r {
	case probes.Success:
		result = ProbeResultSuccessful
	case probes.Failure:
		result = ProbeResultFailed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[probeKey]*ProbeStat{}
	}
	k := probeKey{group, process, kind}
	st := p.m[k]
	if st == nil {
		st = &ProbeStat{Group: group, Process: process, Kind: kind, Results: map[string]uint64{},
			Buckets: make([]uint64, len(ProbeDurationBuckets))}
		p.m[k] = st
	}
	st.Results[result]++
	if d < 0 {
		d = 0
	}
	secs := d.Seconds()
	st.Count++
	st.Sum += secs
	for i, b := range ProbeDurationBuckets {
		if secs <= b {
			st.Buckets[i]++
		}
	}
}

// ProbeStats returns a copy of the probe counts, sorted by group, process
// and kind. A process that left the configuration keeps its counts (a
// counter must not go back), as kubelet's do until it restarts.
func (s *Supervisor) ProbeStats() []ProbeStat {
	p := &s.probeStats
	p.mu.Lock()
	out := make([]ProbeStat, 0, len(p.m))
	for _, st := range p.m {
		c := *st
		c.Results = make(map[string]uint64, len(st.Results))
		for k, v := range st.Results {
			c.Results[k] = v
		}
		c.Buckets = slices.Clone(st.Buckets)
		out = append(out, c)
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Process != b.Process {
			return a.Process < b.Process
		}
		return a.Kind < b.Kind
	})
	return out
}
