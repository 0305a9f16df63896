package logs

import (
	"os"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// sparePipes is the capture pipe of a process's next instance, made in
// advance (Prepare): its read ends non-blocking and in the loop's epoll
// set, its write ends podsup's. A process restarted the moment it exits
// (back-off 0s) then makes no pipe between its exit and its next fork:
// pipe2, fcntl and epoll_ctl were 12 µs of the restart (docs/benchmarks.md,
// S1). No event comes from it while it waits: podsup holds its write end,
// so it is neither readable nor hung up.
type sparePipes struct {
	n int         // pipes: 1, or 2 with separate streams
	r [2]int      // read ends
	w [2]*os.File // write ends, made files here (os.NewFile asks the kernel whether the fd blocks)
}

// close closes every fd of s (closing a read end also takes it out of
// the epoll set); nothing was written to them.
func (s *sparePipes) close() {
	for i := range s.n {
		_ = unix.Close(s.r[i])
		_ = s.w[i].Close()
	}
	proc.HoldFDs(-2 * s.n)
}

// newPipe makes one capture pipe: its read end non-blocking and watched
// by the loop, its write end (an ordinary blocking one, each end being
// its own open file description) for the process. On failure it says
// which step failed and leaves nothing open.
func (h *Hub) newPipe() (fds [2]int, what string, err error) {
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return fds, "creating a pipe", err
	}
	what = "making the capture pipe non-blocking"
	if err = unix.SetNonblock(fds[0], true); err == nil {
		what = "watching the capture pipe"
		err = h.ep.Add(fds[0], unix.EPOLLIN)
	}
	if err != nil {
		_ = unix.Close(fds[0]) // closing a read end also takes it out of the epoll set
		_ = unix.Close(fds[1])
		return fds, what, err
	}
	return fds, "", nil
}

// Prepare makes the capture pipe of group/process's next instance now,
// once its current one has started, so that the next Attach takes it
// instead of making one: for a process restarted the moment it exits
// (back-off 0s; its restart is armed, docs/semantics.md R8). It costs two
// fds per pipe while the process runs, until the next Attach takes them,
// Forget or Close. It does nothing with passthrough, when a pipe is ready
// already, or when one cannot be made (the next Attach then makes its
// own, and says why if it fails too).
func (h *Hub) Prepare(group, process string, l spec.Log) {
	if l.Mode == "passthrough" {
		return
	}
	n := 1
	if l.SeparateStreams {
		n = 2
	}
	h.mu.Lock()
	p := h.procs[group+"/"+process]
	ready := h.closed || p == nil || p.passthrough || p.spare != nil
	h.mu.Unlock()
	if ready {
		return
	}
	s := &sparePipes{}
	kinds := [2]Stream{Stdout, Stderr}
	for s.n < n {
		fds, _, err := h.newPipe()
		if err != nil {
			s.close()
			return
		}
		s.r[s.n], s.w[s.n] = fds[0], os.NewFile(uintptr(fds[1]), p.name+" "+kinds[s.n].String())
		s.n++
	}
	proc.HoldFDs(2 * s.n) // until taken or closed
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.procs[group+"/"+process] != p || p.spare != nil {
		s.close() // closed, forgotten or prepared meanwhile
		return
	}
	p.spare = s
}

// takeSpareLocked hands the spare pipes over to an Attach that needs n of
// them; a spare of another count is closed. h.mu is held.
func (p *procLog) takeSpareLocked(n int) *sparePipes {
	s := p.spare
	p.spare = nil
	if s != nil && s.n != n {
		s.close() // separate_streams changed by a reload
		return nil
	}
	if s != nil {
		proc.HoldFDs(-2 * s.n) // the instance's now, counted as a running process's
	}
	return s
}

// dropSpareLocked closes p's spare pipes, if any. h.mu is held.
func (p *procLog) dropSpareLocked() {
	if p.spare != nil {
		p.spare.close()
		p.spare = nil
	}
}
