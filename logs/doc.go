// Package logs owns what supervised processes write: capturing their stdout
// and stderr without ever blocking the writer, a bounded in-memory tail per
// process for `podsup logs`, and the sinks (podsup's own output, prefixed like
// docker compose or as JSON lines, and rotating per-process files).
//
// # Shape
//
// One Hub per podsup owns one goroutine running an epoll loop over the read
// ends of every capture pipe, plus one goroutine that writes podsup's own
// output. Nothing else runs per process: an idle process costs two pipe fds
// and a few hundred bytes of bookkeeping, and wakes nobody.
//
//	process ──pipe──►┐
//	process ──pipe──►├─ epoll loop ─┬─► tail ring per instance (bounded; lazily grown)
//	process ──pipe──►┘  (1 goroutine)├─► followers (bounded queue each; skip markers)
//	                                 ├─► Out sink (bounded buffer ─► writer goroutine; counted drops)
//	                                 └─► rotating file per process (log_dir)
//
// # Never blocking the writer
//
// The loop only ever blocks in epoll_wait. Every consumer downstream of it
// is either bounded memory it owns (the tail), or a bounded queue whose
// overflow is counted and reported instead of waited on: a follower that
// falls behind receives a Line with Skipped > 0; podsup's stdout, when
// blocked, loses lines and later prints "podsup: dropped N lines". Files are
// written synchronously from the loop (local disk writes are short); a
// stalled disk would stall capture, which is the one known exception.
//
// # Use
//
//	a, err := hub.Attach("web", "api", "3", proc.Log)
//	cmd.Stdout, cmd.Stderr = a.Stdout(), a.Stderr()
//	p, err := sandbox.Start(cmd)
//	a.CloseWriters() // whether or not Start succeeded
//	...
//	<-a.Done()       // optional: both streams reached EOF
//
// With log mode "passthrough" Attach makes no pipe: Stdout and Stderr are
// podsup's own os.Stdout and os.Stderr and nothing is captured.
package logs
