// Package notify owns the readiness protocols between podsup and the
// processes it supervises, and the handing of socket-activation fds to
// them:
//
//   - readiness = "notify": each instance gets a NOTIFY_SOCKET of its own,
//     a path socket (abstract sockets are per network namespace) in
//     podsup's runtime directory. READY=1 makes it ready, and started when
//     it has no startup probe; STATUS= shows in `podsup status`;
//     STOPPING=1 and RELOADING=1 make it not ready until the next
//     READY=1; MAINPID= is logged; with watchdog = "10s" the process gets
//     WATCHDOG_USEC and must send WATCHDOG=1 at least that often, or it is
//     killed like a failed liveness probe (reason Unhealthy, "watchdog
//     timeout"); WATCHDOG=trigger fails it at once and WATCHDOG_USEC=
//     changes the interval. Every fd a message carries is closed at once:
//     that answers BARRIER=1 (sd_notify_barrier waits for its pipe to
//     close; without it `systemd-notify` hangs 5 s and fails) and drops
//     FDSTORE=1, which podsup does not keep.
//   - readiness = "fd:N" (s6's notification-fd): fd N of the process is the
//     write end of a pipe; a newline makes it ready (and started without a
//     startup probe). podsup closes its read end after the newline or at
//     EOF.
//   - sockets = ["web"]: the fds systemd passed to podsup under that name
//     (LISTEN_FDNAMES) become fds 3.. of the process with LISTEN_FDS,
//     LISTEN_FDNAMES and a LISTEN_PID equal to the process's own pid. Go
//     cannot set a variable between fork and exec, so the process is
//     started through `podsup __listenpid PROGRAM ARGS...` (ListenPIDMain),
//     which sets LISTEN_PID=getpid() and execs PROGRAM in the same pid.
//     podsup keeps the sockets open, so they survive the process's
//     restarts and no connection is refused in between.
//
// Messages are attributed by the socket (or pipe) they arrive on, never by
// the sender's pid: each instance has its own, made before its start and
// removed at its exit, so a message always names one instance id, and a
// late message of a previous instance reaches the supervisor under the old
// id, which it ignores.
//
// Results reach the supervisor through its probe seam (ProbeResult, kind
// readiness and startup; liveness for a watchdog miss) and ReportStatus.
//
// # Shape
//
// One Server per podsup runs one goroutine blocked in epoll_wait on every
// notify socket and readiness pipe plus an eventfd for wake-ups: no
// polling, and a socket costs an fd and an epoll entry, not a goroutine.
// The Runtime wraps the supervisor's Runtime: before each start it asks
// the Server for the instance's socket or pipe, adds the environment and
// fds, and after the instance's exit tells the Server to close them.
// Closing happens on the Server's goroutine, so an fd is never closed
// while the loop may be reading it.
package notify
