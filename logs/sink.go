package logs

import (
	"bytes"
	"io"
	"sync"

	"github.com/podsup/podsup/clock"
	"github.com/rs/zerolog"
)

// outSink writes formatted lines to podsup's own output. The epoll loop
// appends to a bounded buffer and never waits; one writer goroutine moves
// the buffer to Out. When Out is slower than the processes (a terminal
// paused with ^S, a log shipper that stopped reading), lines that do not fit
// are dropped and counted, and the writer later prints "podsup: dropped N
// lines" where they were lost.
type outSink struct {
	out    io.Writer
	format string
	limit  int // bytes pending before lines are dropped
	clock  clock.Clock
	log    zerolog.Logger

	mu      sync.Mutex
	pending []byte
	dropped int
	closing bool

	wake     chan struct{} // capacity 1
	finished chan struct{} // closed when the writer goroutine returns
}

// keptSinkBuffer is the largest buffer the writer keeps for reuse.
const keptSinkBuffer = 64 << 10

func newOutSink(out io.Writer, format string, limit int, c clock.Clock, log zerolog.Logger) *outSink {
	s := &outSink{
		out: out, format: format, limit: limit, clock: c, log: log,
		wake: make(chan struct{}, 1), finished: make(chan struct{}),
	}
	go s.run()
	return s
}

// add queues already formatted lines (each ends in its only raw '\n'):
// as many whole lines as fit in the bound; the rest are dropped and
// counted. It never blocks on Out.
func (s *outSink) add(lines []byte) {
	s.mu.Lock()
	room := s.limit - len(s.pending)
	if len(lines) > room {
		keep := 0
		if room > 0 {
			keep = bytes.LastIndexByte(lines[:room], '\n') + 1
		}
		s.dropped += bytes.Count(lines[keep:], []byte{'\n'})
		lines = lines[:keep]
	}
	s.pending = append(s.pending, lines...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *outSink) run() {
	defer close(s.finished)
	var buf []byte
	for {
		<-s.wake
		for {
			s.mu.Lock()
			buf, s.pending = s.pending, buf[:0]
			dropped, closing := s.dropped, s.closing
			s.dropped = 0
			s.mu.Unlock()
			// Drops happened while the buffer was full, i.e. after buf and
			// before anything added since the swap.
			if dropped > 0 {
				buf = appendDroppedNotice(buf, s.format, s.clock.Now(), dropped)
			}
			if len(buf) == 0 {
				if closing {
					return
				}
				break
			}
			if _, err := s.out.Write(buf); err != nil {
				s.log.Debug().Err(err).Int("bytes", len(buf)).Msg("writing captured output to podsup's output failed; lines lost")
			}
			// An idle podsup should not keep a burst's buffer forever.
			if cap(buf) > keptSinkBuffer {
				buf = nil
			}
		}
	}
}

// close flushes what is pending and stops the writer. It returns a channel
// closed once the writer is done; a writer stuck in a blocked Out.Write
// finishes only when that Write returns.
func (s *outSink) close() <-chan struct{} {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return s.finished
}
