package memtrim

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Settling is how a Startup tells that start-up's burst of work is over:
// it reads the heap's allocations every Poll, and the burst may be over
// once a Poll allocated less than Quiet bytes; it is after Max at the
// latest. GCPercent is the GC's percent while the first starts are under
// way (0: left alone), when there are at least GCPercentFrom of them.
type Settling struct {
	Poll          time.Duration
	Quiet         uint64
	Max           time.Duration
	GCPercent     int
	GCPercentFrom int
}

// DefaultSettling suits podsup up: starting a process allocates kBs, so
// a burst of starts allocates MBs a second, while idle processes allocate
// next to nothing. Polls every half second end well before S2 measures
// (PSS a few seconds after every process runs), and the few wake-ups cost
// the idle supervisor nothing; a restart loop that never lets the heap
// settle, or a process held back for long, is trimmed after Max all the
// same.
//
// GCPercent 25: the objects a start keeps for the process's life land
// among the garbage of the starts around it, and the heap's spans stay
// as partly used as they were at the end of the burst (Go never moves an
// object). Collecting four times as often while the first starts run
// packs them closer: at 1000 processes about 1.3 MB less heap resident
// (docs/benchmarks.md, "PSS with 100 and 1000 processes"), for GC cycles
// of a heap of a few MB during the burst alone. Not for a few processes:
// the percent scales the runtime's smallest goal too (4 MB at 100), and a
// podsup that never collected stays without the GC's pages and its
// forced collection every two minutes.
var DefaultSettling = Settling{Poll: 500 * time.Millisecond, Quiet: 256 << 10, Max: 2 * time.Minute,
	GCPercent: 25, GCPercentFrom: 64}

// Startup is start-up's memory regime, from StartupBegins to Settle.
type Startup struct {
	s Settling
	// restore is the GC percent to go back to; -1 when it was not changed.
	restore int
}

// StartupBegins sets the GC percent for the first starts (s.GCPercent)
// when there are at least s.GCPercentFrom of them, unless GOGC in the
// environment chose one, and returns the Startup whose Settle ends it.
// Call it before the first starts.
func StartupBegins(s Settling, starts int) *Startup {
	st := &Startup{s: s, restore: -1}
	if _, set := os.LookupEnv("GOGC"); !set && s.GCPercent > 0 && starts >= s.GCPercentFrom {
		st.restore = debug.SetGCPercent(s.GCPercent)
	}
	return st
}

// Settle waits until start-up's burst of work is over, then gives back
// what only the burst needed: the free heap (debug.FreeOSMemory, when the
// runtime has collected at all: before its first collection nothing is
// free) and the executable's pages (TrimExecutable). started tells
// whether the first starts are over (nil: at once); the GC percent goes
// back to its own once they are, whatever the heap does. The burst is
// over when started says so and a poll saw the heap quiet, or after Max
// at the latest; started is asked at each quiet poll and at a few busy
// ones, and what it allocates is not counted. Settle returns early,
// trimming nothing, when stop is closed, and restores the GC percent
// either way.
//
// Why wait for the end of the burst: starting a thousand processes takes
// seconds, and what it runs and frees after an early trim stays resident.
// The Go runtime keeps free heap pages up to about its next GC goal (twice
// the live heap) and returns the rest only gradually, so the pages the
// burst's garbage filled stay mapped (docs/benchmarks.md, "PSS with 100 and
// 1000 processes"). Collecting once at the end costs one GC cycle. The heap
// alone does not tell: a loaded machine may start nothing in the first
// poll.
func (st *Startup) Settle(started func() bool, stop <-chan struct{}) {
	defer st.restoreGC()
	t := time.NewTicker(st.s.Poll)
	defer t.Stop()
	deadline := time.Now().Add(st.s.Max)
	last := HeapAllocated()
	// While the heap is busy, started is asked at polls 1, 2, 4, 8, …:
	// a status of ten thousand processes is MBs, and the answer then only
	// restores the GC percent.
	polls, nextAsk := 0, 1
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if time.Now().After(deadline) {
			break
		}
		polls++
		quiet := HeapAllocated()-last < st.s.Quiet
		over := false
		if quiet || polls >= nextAsk {
			over = started == nil || started()
			if !quiet {
				nextAsk = 2 * polls
			}
		}
		if over {
			st.restoreGC()
		}
		if quiet && over {
			break
		}
		last = HeapAllocated()
	}
	// The collection first: it reads the tables of every function on a
	// goroutine's stack (the executable's read-only data), which the trim
	// then gives back with the rest. The next collection, two minutes
	// later at the latest, reads them in again.
	if collected() {
		debug.FreeOSMemory()
	}
	TrimExecutable()
}

// collected tells whether the runtime has run a collection yet.
func collected() bool {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > 0
}

func (st *Startup) restoreGC() {
	if st.restore >= 0 {
		debug.SetGCPercent(st.restore)
		st.restore = -1
	}
}
