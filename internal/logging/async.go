package logging

import (
	"fmt"
	"io"
	"sync"
)

// Async writes lines to Out from a goroutine of its own, so a slow terminal,
// pipe or disk never holds up the goroutine that logs (a group's worker).
// It keeps at most Max queued lines; beyond that it drops lines, counts
// them, and writes one notice when it catches up. Idle, it costs a parked
// goroutine and nothing else.
type Async struct {
	out io.Writer
	max int
	// join says that out is a byte stream (NewAsyncStream): the lines
	// queued meanwhile go out in one Write, not one each.
	join   bool
	joined []byte

	mu      sync.Mutex
	cond    *sync.Cond
	queue   [][]byte
	free    [][]byte
	dropped int
	closed  bool
	done    chan struct{}
}

// NewAsync starts writing to out; max <= 0 means 4096 lines.
func NewAsync(out io.Writer, max int) *Async {
	if max <= 0 {
		max = 4096
	}
	a := &Async{out: out, max: max, done: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	go a.loop()
	return a
}

// NewAsyncStream is NewAsync for an out that is a byte stream (a file, a
// pipe, a terminal), where a line need not be a Write of its own: the
// lines queued while the last Write was under way go out together, up to
// maxJoined bytes a Write. A burst of lines (ten thousand processes
// stopping log twenty thousand) then costs a few system calls, not one a
// line (docs/benchmarks.md). A writer whose every Write is one record (the
// journal) needs NewAsync.
func NewAsyncStream(out io.Writer, max int) *Async {
	a := NewAsync(out, max)
	a.join = true
	return a
}

// maxJoined bounds one joined Write of NewAsyncStream.
const maxJoined = 64 << 10

// Write queues a copy of p and returns at once.
func (a *Async) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return a.out.Write(p) // after Close, write through
	}
	if len(a.queue) >= a.max {
		a.dropped++
		return len(p), nil
	}
	var b []byte
	if n := len(a.free); n > 0 {
		b, a.free = a.free[n-1][:0], a.free[:n-1]
	}
	a.queue = append(a.queue, append(b, p...))
	if len(a.queue) == 1 {
		a.cond.Signal()
	}
	return len(p), nil
}

func (a *Async) loop() {
	defer close(a.done)
	var batch [][]byte
	for {
		a.mu.Lock()
		for len(a.queue) == 0 && !a.closed {
			a.cond.Wait()
		}
		if len(a.queue) == 0 && a.closed {
			a.mu.Unlock()
			return
		}
		batch, a.queue = a.queue, batch[:0]
		dropped := a.dropped
		a.dropped = 0
		a.mu.Unlock()
		a.write(batch)
		if dropped > 0 {
			fmt.Fprintf(a.out, "podsup: dropped %d log lines (the log output could not keep up)\n", dropped)
		}
		a.mu.Lock()
		if len(a.free) < 64 {
			for _, b := range batch {
				if cap(b) <= 4096 && len(a.free) < 64 {
					a.free = append(a.free, b)
				}
			}
		}
		a.mu.Unlock()
		batch = batch[:0]
	}
}

// write writes a batch of lines: one Write each, or, joining, as few
// Writes as maxJoined allows (a line longer than that goes alone).
func (a *Async) write(batch [][]byte) {
	if !a.join {
		for _, b := range batch {
			_, _ = a.out.Write(b) // nowhere better to report a log write error
		}
		return
	}
	buf := a.joined[:0]
	for _, b := range batch {
		if len(buf) > 0 && len(buf)+len(b) > maxJoined {
			_, _ = a.out.Write(buf)
			buf = buf[:0]
		}
		buf = append(buf, b...)
	}
	if len(buf) > 0 {
		_, _ = a.out.Write(buf)
	}
	if cap(buf) <= maxJoined {
		a.joined = buf[:0] // kept for the next burst; a longer line's is not
	} else {
		a.joined = nil
	}
}

// Close writes what is queued and stops the goroutine.
func (a *Async) Close() error {
	a.mu.Lock()
	a.closed = true
	a.cond.Signal()
	a.mu.Unlock()
	<-a.done
	return nil
}
