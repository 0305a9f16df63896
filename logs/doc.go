// Package logs owns what supervised processes write: capturing their stdout
// and stderr without ever blocking the writer, a bounded in-memory tail per
// process for `podsup logs`, and the sinks (podsup's own output, prefixed like
// docker compose or as JSON lines, and rotating per-process files).
//
// # Shape
//
// One Hub per podsup owns one goroutine running an epoll loop over the read
// ends of every capture pipe, plus one goroutine that writes podsup's own
// output. Nothing else runs per process: an idle process costs two pipes
// (four fds) and a few hundred bytes of bookkeeping, and wakes nobody.
//
// # Pipes per process, not per instance
//
// A process's two capture pipes are made when its first instance attaches
// and kept, both ends, across its restarts: every instance gets the same
// write ends, so a restart costs no pipe, fcntl, epoll_ctl or close call.
// As podsup holds a write end, a pipe never reaches EOF when an instance
// exits; lines belong to the instance that is current when they are read,
// and Attach first reads what the pipes hold, so the output of an instance
// that exited before the next one attached (a restart) is all its own. A
// child that outlives its instance and writes later is counted as the
// current one's. Forget and a change to log mode "passthrough" close
// podsup's write ends (the read ends leave at EOF); Close closes all.
//
//	process ──pipe──►┐
//	process ──pipe──►├─ epoll loop ──┬─► tail ring per instance (bounded; grown lazily)
//	process ──pipe──►┘ (1 goroutine) ├─► followers (bounded queue each; skip markers)
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
// # Bounds and what happens at them
//
//   - Tail: per instance, TailLines lines and TailBytes bytes (11 bytes of
//     overhead per line); the oldest lines go. The ring starts at 64 bytes
//     and doubles, so memory follows what a process actually wrote. The
//     tail of the instance before the current one is kept for --previous.
//   - Lines: longer than MaxLineBytes are cut into pieces marked Partial; an
//     unterminated last line is delivered at EOF.
//   - Followers: FollowBuffer lines each; beyond that lines are skipped and
//     the follower gets Line{Skipped: n} where they were lost.
//   - Out: OutBufferBytes pending; beyond that whole lines are dropped and
//     "podsup: dropped N lines" (a JSON object in JSON format) is written
//     where they were lost. Every line is either written or counted.
//   - Files: Dir/GROUP/PROCESS.log in the kubelet's CRI format
//     ("TIME STREAM F|P TEXT"), rotated at line boundaries before exceeding
//     spec.Log.MaxSize (default 10 MiB), keeping MaxFiles files in all
//     (default 5): PROCESS.log, PROCESS.log.1, ... Opened on the first line,
//     kept open across instances; closed on Forget (once the output ends)
//     or Close.
//
// # Cost
//
// Fixed: two goroutines, a 64 KiB read buffer, an epoll fd and an eventfd.
// Per captured process: two pipes and about 850 bytes of heap once it has
// written a line (TestMemoryPerCapturedProcess). Per restart: one empty
// read per pipe and the new instance's tail. Throughput: a
// process writing 100 MB of 100-byte lines is read in about 0.15 s.
//
// # Use
//
//	a, err := hub.Attach("web", "api", "3", proc.Log)
//	cmd.Stdout, cmd.Stderr = a.Stdout(), a.Stderr() // the hub's; never closed by the caller
//	p, err := sandbox.Start(cmd)
//	...
//	<-a.Done()       // optional: the next instance attached, Forget or Close
//
//	lines, err := hub.Tail("web", "api", 100, false) // podsup logs --tail 100 [--previous]
//	ch, err := hub.Follow(ctx, "web", "api", 10)     // podsup logs -f
//	hub.Forget("web", "api")                         // removed by a reload
//
// With log mode "passthrough" Attach makes no pipe: Stdout and Stderr are
// podsup's own os.Stdout and os.Stderr and nothing is captured.
package logs
