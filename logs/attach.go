package logs

import (
	"fmt"
	"os"
	"sync"

	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// Attachment is the capture of one process instance: the write ends to give
// the process, and Done for when its output has ended.
type Attachment struct {
	hub  *Hub
	proc *procLog
	// inst and streams live inside the Attachment: one allocation per
	// instance instead of four (memory per process matters, S2).
	inst    instance
	streams [2]stream

	// stdout and stderr are the write ends until CloseWriters.
	mu             sync.Mutex
	stdout, stderr *os.File
	passthrough    bool

	limits fileLimits // rotation of the process's file, from its spec

	open int // streams not yet at EOF; loop-owned (Close's once the loop is gone)
	// done is made on the first Done call (most instances are never
	// waited on) or closed on the end of output, whichever comes first;
	// mu guards it and ended.
	done  chan struct{}
	ended bool
}

// stream is the read end of one capture pipe. Only the loop uses it.
type stream struct {
	fd      int32
	kind    Stream
	att     *Attachment
	partial []byte // an unterminated line, allocated only when one is pending
}

// Attach prepares the capture of a new instance of group/process: with
// l.Mode "passthrough" the process gets podsup's own stdout and stderr;
// otherwise two pipes whose read ends join the loop. The new instance's
// tail becomes the current one; the current one becomes the previous.
//
// The caller hands Stdout and Stderr to sandbox.Cmd and must call
// CloseWriters once sandbox.Start returned, whether or not it succeeded:
// the output ends (Done) only when no copy of the write ends is left open.
func (h *Hub) Attach(group, process, instanceID string, l spec.Log) (*Attachment, error) {
	if l.Mode == "passthrough" {
		return h.attachPassthrough(group, process)
	}
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
	key := group + "/" + process

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		closeFDs(out[0], out[1], errp[0], errp[1])
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
	a := &Attachment{
		hub:    h,
		proc:   p,
		inst:   instance{proc: p, instance: instanceID},
		stdout: os.NewFile(uintptr(out[1]), key+" stdout"),
		stderr: os.NewFile(uintptr(errp[1]), key+" stderr"),
		open:   2,
		limits: fileLimitsOf(l),
	}
	a.streams = [2]stream{
		{fd: int32(out[0]), kind: Stdout, att: a},
		{fd: int32(errp[0]), kind: Stderr, att: a},
	}
	// The loop looks fds up under h.mu, which is held until both are in
	// h.streams: an event that arrives before that waits for it.
	for i := range a.streams {
		s := &a.streams[i]
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: s.fd}
		if err := unix.EpollCtl(h.epfd, unix.EPOLL_CTL_ADD, int(s.fd), &ev); err != nil {
			if i == 1 {
				_ = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_DEL, out[0], nil) // closing it would drop it anyway
			}
			closeFDs(out[0], errp[0])
			_ = a.CloseWriters()
			return nil, fmt.Errorf("watching capture pipe: %w", err)
		}
	}
	for i := range a.streams {
		h.streams[a.streams[i].fd] = &a.streams[i]
	}
	p.mu.Lock()
	if p.cur != nil {
		p.prev = p.cur
	}
	p.cur = &a.inst
	p.mu.Unlock()
	h.widen(len(key))
	return a, nil
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
	if p := h.procs[key]; p == nil || !p.passthrough {
		h.procs[key] = &procLog{group: group, process: process, name: key, passthrough: true}
	}
	// Nothing to drain: done at once.
	return &Attachment{hub: h, passthrough: true, stdout: h.opts.Stdout, stderr: h.opts.Stderr, ended: true}, nil
}

// Stdout is the file to give the process as its stdout (sandbox.Cmd.Stdout);
// nil after CloseWriters.
func (a *Attachment) Stdout() *os.File {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stdout
}

// Stderr is the file to give the process as its stderr; nil after
// CloseWriters.
func (a *Attachment) Stderr() *os.File {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stderr
}

// Passthrough reports whether the process writes to podsup's own output
// directly (nothing is captured).
func (a *Attachment) Passthrough() bool { return a.passthrough }

// CloseWriters closes podsup's copies of the write ends. Call it right
// after sandbox.Start: from then on only the process (and its children)
// hold them, so EOF means its output ended. Passthrough files are podsup's
// own and stay open. Safe to call more than once.
func (a *Attachment) CloseWriters() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.passthrough {
		return nil
	}
	var first error
	for _, f := range []*os.File{a.stdout, a.stderr} {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = fmt.Errorf("closing capture pipe write end: %w", err)
			}
		}
	}
	a.stdout, a.stderr = nil, nil
	return first
}

// Done is closed when both streams reached EOF (every writer, including the
// process's children, closed them), or when the hub closed. Passthrough
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

// streamClosed counts one stream's end; the loop (or Close, after the loop
// stopped) calls it.
func (a *Attachment) streamClosed() {
	a.open--
	if a.open > 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
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
