package logs

import (
	"context"
	"sync"
	"time"
)

// follower feeds one Follow channel. The epoll loop pushes into a bounded
// queue and never waits; a goroutine of the follower's own moves the queue
// to the channel at the reader's pace. Lines that find the queue full are
// counted and replaced by one marker Line{Skipped: n} at the point where they
// were lost, so the reader learns of the gap without slowing the producer.
type follower struct {
	group, process string
	limit          int

	mu      sync.Mutex
	queue   []Line
	skipped int
	ended   bool          // no more lines will be pushed (Forget, Close)
	wake    chan struct{} // capacity 1: "queue changed"
}

func newFollower(group, process string, limit int, backlog []Line) *follower {
	f := &follower{group: group, process: process, limit: limit, queue: backlog, wake: make(chan struct{}, 1)}
	return f
}

// pushBatch enqueues one read's lines, or counts those that find the
// queue full as skipped. It never blocks, and it copies a line's text only
// when the line is kept.
func (f *follower) pushBatch(b *batch, now time.Time, in *instance, kind Stream) {
	f.mu.Lock()
	for _, r := range b.refs {
		if len(f.queue) >= f.limit {
			f.skipped++
			continue
		}
		f.queue = append(f.queue, Line{
			Time: now, Group: f.group, Process: f.process, Instance: in.instance,
			Stream: kind, Text: string(b.text(r)), Partial: r.partial,
		})
	}
	f.mu.Unlock()
	f.notify()
}

// end tells the follower no more lines will come; it delivers what is
// queued and closes its channel.
func (f *follower) end() {
	f.mu.Lock()
	f.ended = true
	f.mu.Unlock()
	f.notify()
}

func (f *follower) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run moves queued lines to out until ctx ends or the follower is ended and
// drained, or the hub quits; then it closes out. unregister is called before returning.
func (f *follower) run(ctx context.Context, quit <-chan struct{}, out chan<- Line, unregister func()) {
	defer close(out)
	defer unregister()
	var batch []Line
	for {
		f.mu.Lock()
		batch, f.queue = f.queue, batch[:0]
		skipped, ended := f.skipped, f.ended
		f.skipped = 0
		f.mu.Unlock()
		// Lines were skipped only while the queue was full, that is after
		// everything in batch and before anything queued later.
		if skipped > 0 {
			batch = append(batch, Line{Group: f.group, Process: f.process, Skipped: skipped})
		}
		for i := range batch {
			select {
			case out <- batch[i]:
				batch[i] = Line{} // let the text be collected
			case <-ctx.Done():
				return
			case <-quit:
				return
			}
		}
		if ended && len(batch) == 0 {
			return
		}
		if ended {
			continue // deliver anything pushed before end, then stop
		}
		select {
		case <-f.wake:
		case <-ctx.Done():
			return
		case <-quit:
			return
		}
	}
}
