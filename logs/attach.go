package logs

import (
	"fmt"
	"os"
	"sync"

	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// Attachment is the capture of one process instance: the write ends to give
// the process, and Done for when the instance's output has ended.
type Attachment struct {
	hub  *Hub
	proc *procLog
	// inst lives inside the Attachment: one allocation per instance.
	inst instance
	c    *capture // nil with passthrough

	// stdout and stderr are the write ends to give the process: podsup's
	// until CloseWriters, then only the process's (or podsup's own files
	// with passthrough). Without SeparateStreams they are the same file.
	stdout, stderr *os.File
	passthrough    bool

	// done is made on the first Done call (most instances are never
	// waited on) or closed when the attachment ends, whichever comes
	// first; mu guards it and ended.
	mu    sync.Mutex
	done  chan struct{}
	ended bool

	// curBefore and prevBefore are the current and previous instances
	// before Attach made this one current: what Withdraw puts back.
	// early says curBefore held only a pre_start's lines, which the next
	// Attach takes over again.
	curBefore, prevBefore *instance
	early                 bool
}

// capture is the pipe (or, with separate streams, the two pipes) one
// instance writes to. podsup keeps only the read ends once the instance
// has started (CloseWriters): a running process costs podsup one fd, and
// its output ends, like any pipe's, when the instance and every child
// holding its stdout have exited. Its lines are its instance's, however
// late they are read.
type capture struct {
	att     *Attachment
	inst    *instance
	streams [2]stream
	n       int         // streams in use: 1, or 2 with separate streams
	w       [2]*os.File // podsup's write ends until CloseWriters; Hub.mu guards them
	limits  fileLimits  // rotation of the process's file, from this instance's spec
	quiet   bool        // log { stdout = false }: kept off Out
	open    int         // streams not yet at EOF; Hub.readMu guards it
}

// stream is the read end of one capture pipe. Only the holder of Hub.readMu
// uses it.
type stream struct {
	fd      int32
	kind    Stream
	c       *capture
	partial []byte // an unterminated line, allocated only when one is pending
}

// Attach prepares the capture of a new instance of group/process: with
// l.Mode "passthrough" the process gets podsup's own stdout and stderr;
// otherwise a new pipe whose write end is both its stdout and its stderr
// (two pipes with l.SeparateStreams). The new instance's tail becomes the
// current one and the one before it the previous one (--previous); what an
// earlier instance (or a child it left) still writes stays its own.
//
// The caller hands Stdout and Stderr to proc.Cmd and calls CloseWriters
// once the process has started, or failed to: until then podsup holds the
// write ends, and the output cannot end.
func (h *Hub) Attach(group, process, instanceID string, l spec.Log) (*Attachment, error) {
	if l.Mode == "passthrough" {
		return h.attachPassthrough(group, process)
	}
	key := group + "/" + process
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	p := h.capturedLocked(group, process)
	a := &Attachment{hub: h, proc: p}
	a.inst = instance{proc: p, instance: instanceID}
	c, err := h.newCapture(a, l)
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	h.widen(len(key))
	a.c = c
	a.stdout, a.stderr = c.w[0], c.w[c.n-1]

	p.mu.Lock()
	a.curBefore, a.prevBefore = p.cur, p.prev
	if e := p.early; e != nil && e == p.cur && e.instance == instanceID {
		a.inst.tail, p.cur, a.early = e.tail, p.prev, true // its pre_start's lines (AppendHook)
	}
	p.early = nil
	if p.cur != nil {
		p.prev = p.cur
	}
	p.cur = &a.inst
	p.mu.Unlock()
	return a, nil
}

// Withdraw undoes Attach for an instance that did not start and will be
// attached again under the same id (a start retried when podsup ran out
// of fds): it closes podsup's write ends, and the current and previous
// instances are again those before Attach, so --previous still shows the
// instance that ran before it. It does nothing with passthrough.
func (a *Attachment) Withdraw() {
	if a.c == nil {
		return
	}
	p := a.proc
	p.mu.Lock()
	if p.cur == &a.inst {
		p.cur, p.prev = a.curBefore, a.prevBefore
		if a.early {
			p.early = a.curBefore // the retry's Attach takes the pre_start's lines again
		}
	}
	p.mu.Unlock()
	_ = a.CloseWriters() // write ends podsup made; nothing to flush
	// The read ends too, now: nothing was written to them, and left to
	// the loop (which retires a stream at its EOF) they stayed open until
	// it came round to them. The start's retry, made at once and alone
	// because fds ran out, then still lacked those fds and failed again.
	h := a.hub
	h.readMu.Lock()
	for i := range a.c.streams[:a.c.n] {
		if s := &a.c.streams[i]; s.fd >= 0 {
			h.retire(s)
		}
	}
	h.readMu.Unlock()
}

// newCapture makes a's pipes and adds their read ends to the loop.
// h.mu is held: the loop looks fds up under it.
func (h *Hub) newCapture(a *Attachment, l spec.Log) (*capture, error) {
	c := &capture{att: a, inst: &a.inst, n: 1, limits: fileLimitsOf(l), quiet: l.NoStdout}
	kinds := []Stream{Stdout}
	if l.SeparateStreams {
		c.n, kinds = 2, []Stream{Stdout, Stderr}
	}
	var made []int // fds to close if a later step fails
	fail := func(what string, err error) (*capture, error) {
		closeFDs(made...) // closing a read end also takes it out of the epoll set
		return nil, fmt.Errorf("%s for the output of %s: %w", what, a.proc.name, err)
	}
	spare := a.proc.takeSpareLocked(c.n)
	for i, kind := range kinds {
		if spare != nil { // made, non-blocking and watched already
			c.streams[i] = stream{fd: int32(spare.r[i]), kind: kind, c: c}
			c.w[i] = spare.w[i]
			continue
		}
		fds, what, err := h.newPipe()
		if err != nil {
			return fail(what, err)
		}
		made = append(made, fds[0], fds[1])
		c.streams[i] = stream{fd: int32(fds[0]), kind: kind, c: c}
		c.w[i] = os.NewFile(uintptr(fds[1]), a.proc.name+" "+kind.String())
	}
	c.open = c.n
	for i := 0; i < c.n; i++ {
		h.streams[c.streams[i].fd] = &c.streams[i]
	}
	a.proc.open += c.n
	return c, nil
}

// closeWriters closes podsup's write ends of c, once. h.mu is held.
func closeWriters(c *capture) {
	for i, f := range c.w {
		if f != nil {
			_ = f.Close() // a write end: nothing buffered in podsup
		}
		c.w[i] = nil
	}
}

// widen raises the console padding to n if it is narrower.
func (h *Hub) widen(n int) {
	for {
		w := h.width.Load()
		if int(w) >= n || h.width.CompareAndSwap(w, int32(n)) {
			return
		}
	}
}

func (h *Hub) attachPassthrough(group, process string) (*Attachment, error) {
	key := group + "/" + process
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	// What earlier captured instances still write stays theirs (and goes
	// to Out and the file) until their pipes end.
	if old := h.procs[key]; old == nil || !old.passthrough {
		if old != nil {
			old.dropSpareLocked()
		}
		h.setProcLocked(&procLog{group: group, process: process, name: key, passthrough: true})
	}
	// Nothing to read: done at once.
	return &Attachment{hub: h, passthrough: true, stdout: h.opts.Stdout, stderr: h.opts.Stderr, ended: true}, nil
}

// Stdout is the file to give the process as its stdout (proc.Cmd.Stdout).
func (a *Attachment) Stdout() *os.File { return a.stdout }

// Stderr is the file to give the process as its stderr.
func (a *Attachment) Stderr() *os.File { return a.stderr }

// Passthrough reports whether the process writes to podsup's own output
// directly (nothing is captured).
func (a *Attachment) Passthrough() bool { return a.passthrough }

// CloseWriters closes podsup's write ends: call it once the process has
// started (it holds its own copies) or failed to start. From then on the
// output ends, and Done is closed, when the instance and every child that
// holds its stdout or stderr have exited. It does nothing with passthrough
// and after the first call.
func (a *Attachment) CloseWriters() error {
	if a.c == nil {
		return nil
	}
	a.hub.mu.Lock()
	closeWriters(a.c)
	a.hub.mu.Unlock()
	// The instance is the process's for good now: forget the one before
	// it, which only Withdraw needed. Kept, it chained every instance of a
	// crash loop to the one two before it, so that none was ever freed
	// (the soak check's RSS doubled in a minute).
	a.proc.mu.Lock()
	a.curBefore, a.prevBefore = nil, nil
	a.proc.mu.Unlock()
	return nil
}

// Done is closed when the instance's output has ended (every stream read
// to its end after CloseWriters) or the hub closed: from then on every line
// the instance wrote is in its tail, the followers' queues, Out's buffer
// and the file. Passthrough attachments are done at once.
func (a *Attachment) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = make(chan struct{})
		if a.ended {
			close(a.done)
		}
	}
	return a.done
}

func (a *Attachment) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return
	}
	a.ended = true
	if a.done != nil {
		close(a.done)
	}
}

func closeFDs(fds ...int) {
	for _, fd := range fds {
		_ = unix.Close(fd) // fresh fds on an error path; nothing to flush
	}
}
