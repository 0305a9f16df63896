// Package apiserver serves podsup's control protocol (the wire objects and
// error classes of package api) for a running supervisor: the /v1 handlers,
// the conversion of the supervisor's snapshots and events into api's wire
// objects, the control socket, and who may use it. It holds no state of
// its own: every request is answered by a Backend.
//
// It is the half of the protocol that links the runtime. Clients import
// package api alone and carry none of it.
//
// Trust is decided per connection from the kernel's SO_PEERCRED and
// SO_PEERGROUPS, and per endpoint by role (roles.go): root and podsup's own
// uid have every role; members of the configured socket group have "read"
// and the roles supervisor.socket_group_roles names ("operate", "logs",
// "exec"); everybody else gets 403 and a log line, before any path is
// looked at. Every endpoint is registered with its role in one table, from
// which the mux is built. The socket is created 0600 (0660 and chgrp'd to
// that group when one is configured) as a second wall.
//
// No request may crash or starve podsup: a request body is one JSON object
// of at most 1 MiB (413 above; 400 for anything else malformed, trailing
// data included) that must arrive within 30 s; headers are limited to
// 64 KiB and 10 s, idle connections close after 2 minutes. Connections and
// streams (events, logs, exec, status watches: followers) have limits
// (Limits), per uid for peers other than root and podsup's own, and the
// followers' are below the connections', so short requests always get
// through; accepting never waits: over a limit the answer is a 503 or 429
// that says which. Streams are not timed: they last as long as their
// client.
//
// Nothing is polled for a client: a status watch wakes when the supervisor
// notifies a new snapshot (Supervisor.NotifyStatus), and cgroup usage and
// paths (describe, status?wide=true) are read from /proc/PID/cgroup and the
// cgroup files during the request that asks for them, so an idle podsup
// with idle clients does no work.
package apiserver
