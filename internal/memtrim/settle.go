package memtrim

import (
	"runtime/debug"
	"time"
)

// Settling is how AfterStartup tells that start-up's burst of work is
// over: it reads the heap's allocations every Poll, and the burst is over
// once a Poll allocated less than Quiet bytes, or after Max at the latest.
type Settling struct {
	Poll  time.Duration
	Quiet uint64
	Max   time.Duration
}

// DefaultSettling suits podsup up: starting a process allocates tens of
// kB, so a burst of starts allocates MBs a second, while idle processes
// allocate next to nothing. Half a second of quiet costs S2 (PSS measured
// a few seconds after every process runs) nothing, and the few wake-ups
// until then cost the idle supervisor nothing either; a restart loop that
// never lets the heap settle is trimmed after Max all the same.
var DefaultSettling = Settling{Poll: 500 * time.Millisecond, Quiet: 256 << 10, Max: 2 * time.Minute}

// AfterStartup waits until start-up's burst of work is over (s), then
// gives back what only the burst needed: the executable's pages
// (TrimExecutable) and the free heap (debug.FreeOSMemory). It returns
// early, trimming nothing, when stop is closed.
//
// Why wait for the end of the burst: starting a thousand processes takes
// seconds, and what it runs and frees after an early trim stays resident.
// The Go runtime keeps free heap pages up to about its next GC goal (twice
// the live heap) and returns the rest only gradually, so the pages the
// burst's garbage filled stay mapped (docs/benchmarks.md, "PSS with 100 and
// 1000 processes": ~6 MB of 22 at 1000 processes). Collecting once at the
// end costs one GC cycle.
func AfterStartup(s Settling, stop <-chan struct{}) {
	t := time.NewTicker(s.Poll)
	defer t.Stop()
	deadline := time.Now().Add(s.Max)
	last := HeapAllocated()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := HeapAllocated()
		if now-last < s.Quiet || time.Now().After(deadline) {
			break
		}
		last = now
	}
	TrimExecutable()
	debug.FreeOSMemory()
}
