package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/epollwait"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// HubOptions configure a Hub. Zero values take the defaults below.
type HubOptions struct {
	// Format of Out: FormatConsole ("web/api | line", the default) or
	// FormatJSON (one object per line).
	Format string
	// Out is podsup's own output; nil writes captured lines nowhere but the
	// tails, followers and files. A process whose log block sets stdout =
	// false (spec.Log.NoStdout) is kept off it.
	Out io.Writer
	// NoPrefix writes console lines to Out without their "group/process | "
	// prefix (`podsup up --no-log-prefix`, as docker compose's flag).
	NoPrefix bool
	// Quote escapes, in console lines, what a terminal would act on (an
	// escape sequence, a bare CR: package termsafe), for an Out that is an
	// operator's terminal. The files in Dir always get the bytes as they
	// were.
	Quote bool
	// PrefixColor, when set, gives the console prefix of the i-th process
	// attached its colour (an SGR sequence), for an Out that is a terminal.
	PrefixColor func(i int) string
	// OutBufferBytes bounds what waits to be written to Out; beyond it lines
	// are dropped and counted. Default 1 MiB.
	OutBufferBytes int
	// Dir is log_dir: when set, each process also writes Dir/GROUP/PROCESS.log
	// (CRI log format), rotated by spec.Log.MaxSize and MaxFiles. NewHub
	// refuses a Dir that others than podsup's user or root can write;
	// nothing under it is reached through a link (safeopen.go).
	Dir string
	// TailLines and TailBytes bound the in-memory tail of each instance.
	// Defaults 1000 lines and 256 KiB (11 bytes of overhead per line).
	TailLines int
	TailBytes int
	// MaxLineBytes splits longer lines into pieces marked Partial. Default
	// 16 KiB; at most 65535.
	MaxLineBytes int
	// FollowBuffer is how many lines a follower may fall behind before lines
	// are skipped for it. Default 1024.
	FollowBuffer int
	// CloseTimeout bounds how long Close waits for Out to take the last
	// pending lines. Default 2 s.
	CloseTimeout time.Duration
	// Stdout and Stderr are what passthrough processes get; default os.Stdout
	// and os.Stderr.
	Stdout, Stderr *os.File
	Clock          clock.Clock
	Logger         zerolog.Logger
}

// Defaults of HubOptions.
const (
	DefaultTailLines      = 1000
	DefaultTailBytes      = 256 << 10
	DefaultMaxLineBytes   = 16 << 10
	DefaultOutBufferBytes = 1 << 20
	DefaultFollowBuffer   = 1024
	DefaultCloseTimeout   = 2 * time.Second
)

// Errors of Tail, Follow and Attach; they come wrapped with the process name.
var (
	ErrUnknownProcess = errors.New("no such process")
	ErrNoPrevious     = errors.New("no previous instance")
	ErrNotCaptured    = errors.New("output is not captured (log mode passthrough)")
	ErrClosed         = errors.New("log hub closed")
)

// Hub captures the output of every supervised process: one per podsup.
// Its methods are safe for concurrent use.
type Hub struct {
	opts  HubOptions
	clock clock.Clock
	log   zerolog.Logger
	sink  *outSink // nil without Out

	ep     *epollwait.Set // the capture pipes and wakefd
	wakefd int            // eventfd: Close wakes the loop through it

	loopDone chan struct{}
	quit     chan struct{} // closed by Close: followers stop
	follows  sync.WaitGroup

	width   atomic.Int32  // widest "group/process", for console padding
	colors  int           // processes given a colour so far; Hub.mu guards it
	wakeups atomic.Uint64 // epoll_wait returns; tests check an idle hub sleeps

	// readMu is held by whoever reads capture pipes and writes what they
	// held: the loop (and Close once it stopped). It guards the streams'
	// partial lines, files, buf and batch. Lock order: readMu, Hub.mu,
	// procLog.mu, follower.mu; Attachment.mu is a leaf.
	readMu sync.Mutex
	buf    []byte
	batch  batch

	// mu guards the maps, closed, captures' write ends and procLog.open.
	mu      sync.Mutex
	closed  bool
	streams map[int32]*stream
	procs   map[string]*procLog
	// byGroup names the processes of each group in procs, so that
	// forgetting a group is not a walk over every process of every group
	// (a hundred groups of a hundred ending together made that O(n²)).
	byGroup map[string]map[string]struct{}
}

// setProcLocked records p in procs and byGroup. h.mu is held.
func (h *Hub) setProcLocked(p *procLog) {
	h.procs[p.name] = p
	names := h.byGroup[p.group]
	if names == nil {
		names = map[string]struct{}{}
		h.byGroup[p.group] = names
	}
	names[p.process] = struct{}{}
}

// deleteProcLocked forgets group/process in procs and byGroup and
// returns what procs held. h.mu is held.
func (h *Hub) deleteProcLocked(group, process string) *procLog {
	key := group + "/" + process
	p := h.procs[key]
	delete(h.procs, key)
	if names := h.byGroup[group]; names != nil {
		delete(names, process)
		if len(names) == 0 {
			delete(h.byGroup, group)
		}
	}
	return p
}

// procLog is everything kept about one process across its instances.
type procLog struct {
	group, process, name string
	passthrough          bool
	color                string // the prefix's SGR sequence with HubOptions.PrefixColor

	// open counts the streams of the process's captures not yet at EOF;
	// its file is closed when none is left. Hub.mu guards it.
	open int

	// mu guards cur, prev, their tails and followers.
	mu        sync.Mutex
	cur, prev *instance
	followers []*follower
	// early is cur while it holds only a pre_start hook's lines
	// (AppendHook): the next Attach of its id takes its tail over.
	early *instance

	file *rotatingFile // nil without Dir; guarded by Hub.readMu

	// spare is the next instance's pipe made in advance (Hub.Prepare),
	// nil when none; Hub.mu guards it.
	spare *sparePipes
}

// instance is one run of a process: its tail is what --previous shows
// once the next instance has started.
type instance struct {
	proc     *procLog
	instance string
	tail     tail
}

// NewHub starts the capture loop.
func NewHub(opts HubOptions) (*Hub, error) {
	opts = withDefaults(opts)
	switch opts.Format {
	case FormatConsole, FormatJSON:
	default:
		return nil, fmt.Errorf("log format %q is not one of %q, %q", opts.Format, FormatConsole, FormatJSON)
	}
	if opts.Dir != "" {
		// An insecure log_dir is refused before any process runs (a
		// process could redirect root's writes through it); one that
		// cannot be opened yet is reported by the first write too.
		warn, err := checkLogDir(opts.Dir)
		if err != nil {
			return nil, err
		}
		if warn != nil {
			opts.Logger.Warn().Err(warn).Msg("log_dir is not usable yet; log files are written once it is")
		}
	}
	ep, err := epollwait.New()
	if err != nil {
		return nil, fmt.Errorf("creating epoll instance: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = ep.Close() // nothing registered yet
		return nil, fmt.Errorf("creating eventfd: %w", err)
	}
	if err := ep.Add(wakefd, unix.EPOLLIN); err != nil {
		_ = unix.Close(wakefd)
		_ = ep.Close()
		return nil, fmt.Errorf("watching eventfd: %w", err)
	}
	h := &Hub{
		opts:     opts,
		clock:    opts.Clock,
		log:      opts.Logger,
		ep:       ep,
		wakefd:   wakefd,
		buf:      make([]byte, readBufferBytes),
		loopDone: make(chan struct{}),
		quit:     make(chan struct{}),
		streams:  make(map[int32]*stream),
		procs:    make(map[string]*procLog),
		byGroup:  make(map[string]map[string]struct{}),
	}
	if opts.Out != nil {
		h.sink = newOutSink(opts.Out, opts.Format, opts.OutBufferBytes, h.clock, h.log)
	}
	go h.loop()
	return h, nil
}

func withDefaults(o HubOptions) HubOptions {
	if o.Format == "" {
		o.Format = FormatConsole
	}
	if o.OutBufferBytes <= 0 {
		o.OutBufferBytes = DefaultOutBufferBytes
	}
	if o.TailLines <= 0 {
		o.TailLines = DefaultTailLines
	}
	if o.TailBytes <= 0 {
		o.TailBytes = DefaultTailBytes
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	o.MaxLineBytes = min(o.MaxLineBytes, 1<<16-1)
	// The tail must hold at least one line of the longest kind.
	o.TailBytes = max(o.TailBytes, recordHeader+o.MaxLineBytes)
	if o.FollowBuffer <= 0 {
		o.FollowBuffer = DefaultFollowBuffer
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	o.Clock = clock.Or(o.Clock)
	return o
}

// Close stops capturing: the loop and every follower end, every capture
// pipe is closed (attachments still current report Done), files are closed,
// and what is pending for Out is flushed for at most CloseTimeout.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()

	var one [8]byte
	one[0] = 1 // eventfd counters are host-endian; 1 in any byte is non-zero
	if _, err := unix.Write(h.wakefd, one[:]); err != nil {
		return fmt.Errorf("waking the log loop: %w", err)
	}
	<-h.loopDone
	close(h.quit)
	h.follows.Wait()

	// The loop has stopped; Attach sees closed.
	h.readMu.Lock()
	h.mu.Lock()
	var ended []*Attachment
	for fd, s := range h.streams {
		_ = unix.Close(int(fd)) // a read end; nothing to flush
		s.fd = -1
		c := s.c
		if c.open--; c.open == 0 {
			closeWriters(c) // a process that never started
			ended = append(ended, c.att)
		}
		if f := c.inst.proc.file; f != nil {
			f.close() // the process may have been forgotten: not in procs
		}
	}
	clear(h.streams)
	for _, p := range h.procs {
		if p.file != nil {
			p.file.close()
		}
		p.dropSpareLocked()
	}
	h.mu.Unlock()
	h.readMu.Unlock()
	for _, a := range ended {
		a.end()
	}

	if h.sink != nil {
		t := h.clock.NewTimer(h.opts.CloseTimeout)
		select {
		case <-h.sink.close():
			t.Stop()
		case <-t.C():
			h.log.Warn().Msg("podsup's output did not take the last captured lines in time; leaving them")
		}
	}
	_ = unix.Close(h.wakefd) // the loop, its only reader, has returned
	_ = h.ep.Close()
	return nil
}

// Forget drops everything kept about a process: call it once the process
// is no longer in the configuration and its last instance has exited. Its
// followers end after the lines already queued for them, and `podsup logs`
// no longer knows it. Output still in its pipes (or written later by a
// child it left behind) is read to its end as before, into podsup's output
// and its file, and then the pipes are closed: a forgotten process holds no
// fd once its output has ended. A later instance of the same name starts
// afresh.
func (h *Hub) Forget(group, process string) {
	h.mu.Lock()
	p := h.deleteProcLocked(group, process)
	if p != nil {
		p.dropSpareLocked()
	}
	h.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, f := range p.followers {
		f.end()
	}
	p.followers = nil
	p.mu.Unlock()
}

// ForgetGroup forgets every process of group (Forget): the group is no
// longer in the configuration, or is being replaced by a new spec of it.
func (h *Hub) ForgetGroup(group string) {
	h.mu.Lock()
	names := make([]string, 0, len(h.byGroup[group]))
	for n := range h.byGroup[group] {
		names = append(names, n)
	}
	h.mu.Unlock()
	for _, n := range names {
		h.Forget(group, n)
	}
}

func (h *Hub) proc(group, process string) (*procLog, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	p := h.procs[group+"/"+process]
	if p == nil {
		return nil, fmt.Errorf("%s/%s: %w", group, process, ErrUnknownProcess)
	}
	if p.passthrough {
		return nil, fmt.Errorf("%s/%s: %w", group, process, ErrNotCaptured)
	}
	return p, nil
}

// Query selects lines of one process for Lines and FollowQuery.
type Query struct {
	// Tail is how many of the last lines (all kept when <= 0; with
	// FollowQuery, none when 0 and all kept when < 0).
	Tail int
	// Previous selects the instance before the current one.
	Previous bool
	// Instance, when set, selects the kept instance (current or previous)
	// of that id instead: what the supervisor names the last terminated
	// one, which is the current one while the process waits in back-off.
	Instance string
	// Since, when not zero, keeps only lines captured at or after it; Tail
	// counts among those.
	Since time.Time
}

// Tail returns the last n lines (all kept lines when n <= 0) of the current
// instance of group/process, or of the one before it when previous is set.
func (h *Hub) Tail(group, process string, n int, previous bool) ([]Line, error) {
	return h.Lines(group, process, Query{Tail: n, Previous: previous})
}

// Lines returns the kept lines of one instance of group/process that q
// selects. An instance that is not kept (no previous one yet, or an id
// that is neither the current nor the previous) is ErrNoPrevious.
func (h *Hub) Lines(group, process string, q Query) ([]Line, error) {
	p, err := h.proc(group, process)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.pick(q)
	if in == nil {
		return nil, fmt.Errorf("%s/%s: %w", group, process, ErrNoPrevious)
	}
	return in.tail.lines(q.Tail, sinceNano(q.Since), in), nil
}

// pick is the instance q names; p.mu is held.
func (p *procLog) pick(q Query) *instance {
	switch {
	case q.Instance != "":
		for _, in := range []*instance{p.cur, p.prev} {
			if in != nil && in.instance == q.Instance {
				return in
			}
		}
		return nil
	case q.Previous:
		return p.prev
	}
	return p.cur
}

func sinceNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Follow streams the lines of group/process, across its instances, until
// ctx ends, the process is forgotten or the hub closes; then the channel is
// closed. It starts with the last tail lines of the current instance (none
// when tail == 0, all kept when tail < 0). The producer never waits for the
// reader: when the reader falls FollowBuffer lines behind, further lines are
// skipped for it and a Line with Skipped = their count marks the gap.
func (h *Hub) Follow(ctx context.Context, group, process string, tail int) (<-chan Line, error) {
	return h.FollowQuery(ctx, group, process, Query{Tail: tail})
}

// FollowQuery is Follow with the backlog chosen by q: its last q.Tail lines
// captured at or after q.Since. Previous and Instance do not apply: a
// follower follows the current instance and the ones after it.
func (h *Hub) FollowQuery(ctx context.Context, group, process string, q Query) (<-chan Line, error) {
	p, err := h.proc(group, process)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	var backlog []Line
	if q.Tail != 0 && p.cur != nil {
		backlog = p.cur.tail.lines(max(q.Tail, 0), sinceNano(q.Since), p.cur)
	}
	f := newFollower(group, process, h.opts.FollowBuffer, backlog)
	p.followers = append(p.followers, f)
	p.mu.Unlock()

	out := make(chan Line, 16)
	h.follows.Add(1)
	go func() {
		defer h.follows.Done()
		f.run(ctx, h.quit, out, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			for i, g := range p.followers {
				if g == f {
					p.followers = append(p.followers[:i], p.followers[i+1:]...)
					break
				}
			}
		})
	}()
	return out, nil
}
