package main

// reloadQueue runs the reloads SIGHUP asks for on a goroutine of its own,
// one at a time, so that the signal loop never does I/O: a reload reads
// files, and one that blocked (a FIFO in conf.d did, before config
// refused them) or took long (a large configuration) must not keep
// SIGTERM and SIGINT from being handled. Requests that come while a reload
// runs coalesce into one more: it reads the files as they are by then,
// which is all that any of them asked for.
type reloadQueue struct {
	pending chan struct{}
}

// startReloadQueue starts the goroutine that runs reload for each
// request. It lives as long as podsup up.
func startReloadQueue(reload func()) *reloadQueue {
	q := &reloadQueue{pending: make(chan struct{}, 1)}
	go func() {
		for range q.pending {
			reload()
		}
	}()
	return q
}

// request asks for a reload and returns at once: one already pending
// covers it.
func (q *reloadQueue) request() {
	select {
	case q.pending <- struct{}{}:
	default:
	}
}
