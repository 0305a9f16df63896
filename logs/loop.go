package logs

import (
	"bytes"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// readBufferBytes is one read's worth: the default pipe capacity, so one
// read usually empties a pipe.
const readBufferBytes = 64 << 10

// keptPartialBytes is the largest unterminated-line buffer a stream keeps
// for reuse once its line is complete; bigger ones are released.
const keptPartialBytes = 1 << 10

// batch holds the lines of one read, copied out of the read buffer, so each
// consumer is visited once per read rather than once per line.
type batch struct {
	arena []byte
	refs  []lineRef
	out   []byte // formatted for Out or a file
}

type lineRef struct {
	off, n  int
	partial bool
}

func (b *batch) reset() {
	b.arena, b.refs = b.arena[:0], b.refs[:0]
}

func (b *batch) add(text []byte, partial bool) {
	b.refs = append(b.refs, lineRef{off: len(b.arena), n: len(text), partial: partial})
	b.arena = append(b.arena, text...)
}

func (b *batch) text(r lineRef) []byte { return b.arena[r.off : r.off+r.n] }

// loop is the one capture goroutine. It waits for the epoll set parked in
// the runtime's poller (internal/epollwait; no timeout: an idle podsup is
// not woken) and, level-triggered, does one read per ready pipe per
// wake-up, so a process writing flat out cannot starve the others: the
// next wait reports it again.
func (h *Hub) loop() {
	defer close(h.loopDone)
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := h.ep.Wait(events)
		h.wakeups.Add(1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			h.log.Error().Err(err).Msg("epoll_wait failed; output capture stopped")
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(h.wakefd) {
				return // only Close writes the eventfd
			}
			h.readMu.Lock()
			h.mu.Lock()
			s := h.streams[ev.Fd]
			h.mu.Unlock()
			if s != nil {
				h.readStream(s)
			}
			h.readMu.Unlock()
		}
	}
}

// readStream does one read and dispatches the complete lines; at EOF it
// flushes an unterminated last line and retires the stream. It returns how
// many bytes it read. h.readMu is held.
func (h *Hub) readStream(s *stream) int {
	buf, b := h.buf, &h.batch
	n, err := unix.Read(int(s.fd), buf)
	if err == unix.EAGAIN || err == unix.EINTR {
		return 0 // spurious wake-up; level-triggered epoll reports it again
	}
	b.reset()
	if n > 0 {
		h.split(s, buf[:n], b)
	} else {
		if err != nil {
			h.log.Debug().Err(err).Str("process", s.c.inst.proc.name).Msg("reading captured output failed; treating as end of output")
		}
		if len(s.partial) > 0 {
			b.add(s.partial, false)
		}
		s.partial = nil
	}
	if len(b.refs) > 0 {
		h.dispatch(s, h.clock.Now(), b)
	}
	if n <= 0 {
		h.retire(s)
		return 0
	}
	return n
}

// split cuts data into lines, joining it to the stream's pending partial
// line and cutting lines longer than MaxLineBytes into Partial pieces.
func (h *Hub) split(s *stream, data []byte, b *batch) {
	limit := h.opts.MaxLineBytes
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.partial = append(s.partial, data...)
			for len(s.partial) > limit {
				b.add(s.partial[:limit], true)
				s.partial = s.partial[:copy(s.partial, s.partial[limit:])]
			}
			return
		}
		line := data[:i]
		if len(s.partial) > 0 {
			s.partial = append(s.partial, line...)
			line = s.partial
		}
		for len(line) > limit {
			b.add(line[:limit], true)
			line = line[limit:]
		}
		b.add(line, false)
		if cap(s.partial) > keptPartialBytes {
			s.partial = nil
		} else {
			s.partial = s.partial[:0]
		}
		data = data[i+1:]
	}
}

// dispatch hands one read's lines to every consumer; none of them waits for
// a reader.
func (h *Hub) dispatch(s *stream, now time.Time, b *batch) {
	in := s.c.inst
	p := in.proc
	flags := streamFlags(s.kind)
	unixNano := now.UnixNano()

	p.mu.Lock()
	for _, r := range b.refs {
		f := flags
		if r.partial {
			f |= flagPartial
		}
		in.tail.add(unixNano, f, b.text(r), h.opts.TailLines, h.opts.TailBytes)
	}
	for _, f := range p.followers {
		f.pushBatch(b, now, in, s.kind)
	}
	p.mu.Unlock()

	if h.sink != nil && !s.c.quiet {
		b.out = b.out[:0]
		width := int(h.width.Load())
		var marked []byte
		for _, r := range b.refs {
			if h.opts.Format == FormatJSON {
				b.out = appendJSON(b.out, now, in, s.kind, r.partial, b.text(r))
				continue
			}
			text := b.text(r)
			if s.kind.Hook() {
				marked = markHook(marked[:0], s.kind, text)
				text = marked
			}
			if h.opts.NoPrefix {
				b.out = appendText(b.out, text, h.opts.Quote)
			} else {
				b.out = appendConsole(b.out, p.name, width, p.color, text, h.opts.Quote)
			}
		}
		h.sink.add(b.out)
	}
	if p.file != nil {
		h.writeFile(s, now, b)
	}
}

// writeFile appends the batch to the process's file, rotating at line
// boundaries so no file grows past MaxSize (unless one line alone does).
func (h *Hub) writeFile(s *stream, now time.Time, b *batch) {
	c := s.c
	r, lim := c.inst.proc.file, c.limits
	err := func() error {
		if r.f == nil {
			if err := r.open(); err != nil {
				return err
			}
		}
		b.out = b.out[:0]
		var marked []byte
		for _, ref := range b.refs {
			start := len(b.out)
			text := b.text(ref)
			if s.kind.Hook() {
				marked = markHook(marked[:0], s.kind, text)
				text = marked
			}
			b.out = appendCRI(b.out, now, s.kind.cri(), ref.partial, text)
			// Rotate before this line if it would overflow a file that
			// already holds something; a line bigger than the limit is
			// written alone.
			if r.size+int64(len(b.out)) > lim.maxSize && r.size+int64(start) > 0 {
				if err := r.write(b.out[:start]); err != nil {
					return err
				}
				if err := r.rotate(lim); err != nil {
					return err
				}
				b.out = b.out[:copy(b.out, b.out[start:])]
			}
		}
		return r.write(b.out)
	}()
	if err != nil {
		if r.err == nil {
			h.log.Error().Err(err).Str("process", c.inst.proc.name).Msg("writing log file failed; lines lost until it works again")
		}
		r.err = err
		r.close()
		return
	}
	r.err = nil
}

// retire removes a stream at EOF from the loop and closes its read end;
// the attachment is done once its last stream is retired, and the
// process's file is closed once none of its streams is open (it reopens
// on the next line). h.readMu is held.
func (h *Hub) retire(s *stream) {
	c := s.c
	p := c.inst.proc
	h.mu.Lock()
	delete(h.streams, s.fd)
	p.open--
	idle := p.open == 0
	h.mu.Unlock()
	// Closing the fd removes it from the epoll set; the explicit delete
	// keeps that true even if the fd were ever duplicated.
	_ = h.ep.Delete(int(s.fd))
	_ = unix.Close(int(s.fd)) // a read end at EOF: nothing to flush
	s.fd = -1
	if idle && p.file != nil {
		p.file.close()
	}
	if c.open--; c.open == 0 {
		c.att.end()
	}
}
