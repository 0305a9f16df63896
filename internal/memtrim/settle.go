package memtrim

import (
	"runtime/debug"
	"time"
)

// Settling is how AfterStartup tells that start-up's burst of work is
// over: it reads the heap's allocations every Poll, and the burst may be
// over once a Poll allocated less than Quiet bytes; it is after Max at
// the latest.
type Settling struct {
	Poll  time.Duration
	Quiet uint64
	Max   time.Duration
}

// DefaultSettling suits podsup up: starting a process allocates kBs, so
// a burst of starts allocates MBs a second, while idle processes allocate
// next to nothing. Polls every half second end well before S2 measures
// (PSS a few seconds after every process runs), and the few wake-ups cost
// the idle supervisor nothing; a restart loop that never lets the heap
// settle, or a process held back for long, is trimmed after Max all the
// same.
var DefaultSettling = Settling{Poll: 500 * time.Millisecond, Quiet: 256 << 10, Max: 2 * time.Minute}

// AfterStartup waits until start-up's burst of work is over, then gives
// back what only the burst needed: the executable's pages
// (TrimExecutable) and the free heap (debug.FreeOSMemory). The burst is
// over when started reports so (nil: at once) and a poll of s saw the heap
// quiet, or after s.Max at the latest; started is asked only after a quiet
// poll, and what it allocates is not counted. AfterStartup returns early,
// trimming nothing, when stop is closed.
//
// Why wait for the end of the burst: starting a thousand processes takes
// seconds, and what it runs and frees after an early trim stays resident.
// The Go runtime keeps free heap pages up to about its next GC goal (twice
// the live heap) and returns the rest only gradually, so the pages the
// burst's garbage filled stay mapped (docs/benchmarks.md, "PSS with 100 and
// 1000 processes"). Collecting once at the end costs one GC cycle. The heap
// alone does not tell: a loaded machine may start nothing in the first
// poll.
func AfterStartup(s Settling, started func() bool, stop <-chan struct{}) {
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
		if time.Now().After(deadline) {
			break
		}
		if HeapAllocated()-last < s.Quiet && (started == nil || started()) {
			break
		}
		last = HeapAllocated()
	}
	TrimExecutable()
	debug.FreeOSMemory()
}
