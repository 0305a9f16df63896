// Package logs owns what supervised processes write: capturing their stdout
// and stderr without ever blocking the writer, a bounded in-memory tail per
// process for `podsup logs`, and the sinks (podsup's own output, prefixed like
// docker compose or as JSON lines, and rotating per-process files).
//
// # Shape
//
// One Hub per podsup owns one goroutine running an epoll loop over the read
// ends of every capture pipe, plus one goroutine that writes podsup's own
// output. Nothing else runs per process: a running process costs podsup
// one fd (the read end of its pipe) and a few hundred bytes of bookkeeping,
// and wakes nobody.
//
// # One pipe per instance, read end only
//
// Every instance gets a new pipe whose write end is both its stdout and
// its stderr, as on a terminal: lines keep the order they were written in
// and are all reported as stdout. podsup closes its copy of the write end
// once the process has started (Attachment.CloseWriters), so it holds one
// fd per running process and none once the output has ended: a process in
// back-off, or removed by a reload, costs no fd. The pipe reaches EOF when
// the instance and every child holding its output have exited; lines are
// the instance's own however late they come (a child it left writing after
// the next instance started adds to --previous).
//
// A process whose log block sets separate_streams = true gets two pipes,
// one per stream, and its lines say which one they came from (the JSON
// "stream" field, the CRI files' stream column, `podsup logs -o json`); it
// costs one fd more while it runs, and the relative order of its stdout and
// stderr lines is no longer kept. Without it, the stream column and field
// still exist and say "stdout".
//
// The price of a pipe per instance is one pipe2, fcntl, epoll_ctl and two
// close calls per restart (docs/benchmarks.md); keeping both ends of the
// pipes across instances saved them but cost four fds per process at rest,
// which ran podsup out of fds at about 4,000 processes.
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
//     kept open while any of the process's output is open; closed when
//     none is (reopened by the next line) or on Close. Every file and
//     GROUP directory is opened relative to its parent's fd without
//     following a link, GROUP is made 0750 by podsup, and a log_dir or
//     GROUP directory that another user could write is refused
//     (safeopen.go): a process must not redirect root's writes.
//
// # Cost
//
// Fixed: two goroutines, a 64 KiB read buffer, an epoll fd and an eventfd.
// Per running captured process: one fd (two with separate_streams; one
// more with log_dir once it has written) and about 850 bytes of heap once it has
// written a line (BenchmarkMemoryPerCapturedProcess measures it,
// TestCaptureHeapPerProcessStaysSmall bounds it). Per restart: one empty
// read per pipe and the new instance's tail. Throughput: a
// process writing 100 MB of 100-byte lines is read in about 0.15 s.
//
// # Use
//
//	a, err := hub.Attach("web", "api", "3", pr.Log) // pr: the spec.Process
//	cmd.Stdout, cmd.Stderr = a.Stdout(), a.Stderr()
//	p, err := proc.Start(cmd)
//	a.CloseWriters() // the process has its copies; podsup keeps the read end only
//	...
//	<-a.Done()       // optional: every line of the instance has been read
//
//	lines, err := hub.Tail("web", "api", 100, false) // podsup logs --tail 100 [--previous]
//	lines, err = hub.Lines("web", "api", logs.Query{Instance: id, Since: t}) // an instance by id, lines since t
//	ch, err := hub.Follow(ctx, "web", "api", 10)     // podsup logs -f
//	hub.Forget("web", "api")                         // removed by a reload, its last instance gone
//
// With log mode "passthrough" Attach makes no pipe: Stdout and Stderr are
// podsup's own os.Stdout and os.Stderr and nothing is captured.
package logs
