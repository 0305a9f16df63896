package logs

import (
	"fmt"
	"os"
	"sync"

	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// Attachment is the capture of one process instance: the write ends to give
// the process, and Done for when this instance stopped being the current one.
type Attachment struct {
	hub  *Hub
	proc *procLog
	// inst lives inside the Attachment: one allocation per instance.
	inst instance

	// stdout and stderr are the process's capture pipes' write ends, shared
	// by all its instances and owned by the hub (or podsup's own files
	// with passthrough): the caller never closes them.
	stdout, stderr *os.File
	passthrough    bool

	// done is made on the first Done call (most instances are never
	// waited on) or closed when the attachment ends, whichever comes
	// first; mu guards it and ended.
	mu    sync.Mutex
	done  chan struct{}
	ended bool
}

// capture is the pair of pipes a process's instances write to. podsup keeps
// both ends open across instances, so a restart costs no pipe or epoll
// call; lines belong to the instance that is current when they are read.
// Once retired (Forget, a change of log mode, a read error) its write ends
// are closed and its read ends leave the loop at EOF, like any pipe.
type capture struct {
	proc    *procLog
	streams [2]stream
	w       [2]*os.File // podsup's write ends; nil once retired
	limits  fileLimits  // rotation of the process's file, from its latest spec
	open    int         // streams not yet at EOF
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
// otherwise the process's capture pipes, made on its first instance and
// kept for the next ones. What the previous instance wrote before Attach is
// read and kept as its own; its tail becomes the previous one (--previous),
// the new instance's the current one.
//
// The caller hands Stdout and Stderr to sandbox.Cmd; they stay podsup's
// (CloseWriters is kept for callers and closes nothing).
func (h *Hub) Attach(group, process, instanceID string, l spec.Log) (*Attachment, error) {
	if l.Mode == "passthrough" {
		return h.attachPassthrough(group, process)
	}
	key := group + "/" + process
	h.readMu.Lock()
	defer h.readMu.Unlock()

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	p := h.procs[key]
	if p == nil || p.passthrough {
		p = &procLog{group: group, process: process, name: key}
		if h.opts.Dir != "" {
			p.file = &rotatingFile{path: h.filePath(group, process)}
		}
		h.procs[key] = p
	}
	c := p.capture
	if c != nil && c.open < 2 {
		h.retireCapture(c) // a stream failed: start over with fresh pipes
		c, p.capture = nil, nil
	}
	if c == nil {
		var err error
		if c, err = h.newCapture(p); err != nil {
			h.mu.Unlock()
			return nil, err
		}
		p.capture = c
	}
	h.mu.Unlock()
	h.widen(len(key))

	// What the previous instance left in the pipes is its own.
	h.drain(c)
	c.limits = fileLimitsOf(l)
	a := &Attachment{
		hub:    h,
		proc:   p,
		inst:   instance{proc: p, instance: instanceID},
		stdout: c.w[0],
		stderr: c.w[1],
	}
	p.mu.Lock()
	if p.cur != nil {
		p.prev = p.cur
	}
	p.cur = &a.inst
	old := p.att
	p.att = a
	p.mu.Unlock()
	if old != nil {
		old.end()
	}
	return a, nil
}

// newCapture makes p's two pipes and adds their read ends to the loop.
// h.mu is held: the loop looks fds up under it.
func (h *Hub) newCapture(p *procLog) (*capture, error) {
	var out, errp [2]int
	if err := unix.Pipe2(out[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	if err := unix.Pipe2(errp[:], unix.O_CLOEXEC); err != nil {
		closeFDs(out[0], out[1])
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	// Only the read ends are non-blocking (each end is its own open file
	// description): the process gets an ordinary blocking stdout.
	for _, fd := range []int{out[0], errp[0]} {
		if err := unix.SetNonblock(fd, true); err != nil {
			closeFDs(out[0], out[1], errp[0], errp[1])
			return nil, fmt.Errorf("making capture pipe non-blocking: %w", err)
		}
	}
	c := &capture{proc: p, open: 2}
	c.streams = [2]stream{
		{fd: int32(out[0]), kind: Stdout, c: c},
		{fd: int32(errp[0]), kind: Stderr, c: c},
	}
	for i := range c.streams {
		s := &c.streams[i]
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: s.fd}
		if err := unix.EpollCtl(h.epfd, unix.EPOLL_CTL_ADD, int(s.fd), &ev); err != nil {
			if i == 1 {
				_ = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_DEL, out[0], nil) // closing it would drop it anyway
			}
			closeFDs(out[0], out[1], errp[0], errp[1])
			return nil, fmt.Errorf("watching capture pipe: %w", err)
		}
	}
	c.w = [2]*os.File{
		os.NewFile(uintptr(out[1]), p.name+" stdout"),
		os.NewFile(uintptr(errp[1]), p.name+" stderr"),
	}
	for i := range c.streams {
		h.streams[c.streams[i].fd] = &c.streams[i]
	}
	return c, nil
}

// retireCapture closes podsup's write ends of c: its read ends reach EOF,
// and leave the loop, once every instance (and child) holding them is gone.
func (h *Hub) retireCapture(c *capture) {
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
	h.readMu.Lock()
	defer h.readMu.Unlock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	old := h.procs[key]
	if old == nil || !old.passthrough {
		h.procs[key] = &procLog{group: group, process: process, name: key, passthrough: true}
	}
	h.mu.Unlock()
	if old != nil && !old.passthrough {
		h.dropCapture(old)
	}
	// Nothing to drain: done at once.
	return &Attachment{hub: h, passthrough: true, stdout: h.opts.Stdout, stderr: h.opts.Stderr, ended: true}, nil
}

// dropCapture reads what p's pipes hold, retires them and ends p's current
// attachment: p is no longer what its process's output goes to. h.readMu is
// held.
func (h *Hub) dropCapture(p *procLog) {
	if c := p.capture; c != nil {
		h.drain(c)
		h.retireCapture(c)
		p.capture = nil
	}
	p.mu.Lock()
	a := p.att
	p.att = nil
	p.mu.Unlock()
	if a != nil {
		a.end()
	}
}

// Stdout is the file to give the process as its stdout (sandbox.Cmd.Stdout).
func (a *Attachment) Stdout() *os.File { return a.stdout }

// Stderr is the file to give the process as its stderr.
func (a *Attachment) Stderr() *os.File { return a.stderr }

// Passthrough reports whether the process writes to podsup's own output
// directly (nothing is captured).
func (a *Attachment) Passthrough() bool { return a.passthrough }

// CloseWriters closes nothing: the write ends are the process's capture
// pipes, which the hub keeps open for its next instances (and closes on
// Forget or Close). It stays so that callers need not know.
func (a *Attachment) CloseWriters() error { return nil }

// Done is closed when the attachment ended: the next instance of the
// process attached, the process was forgotten, its log mode changed, or
// the hub closed. It does not wait for the instance's output to end: the
// pipes outlive instances, so there is no EOF per instance. Passthrough
// attachments are done at once.
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
