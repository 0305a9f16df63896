// Package api is podsup's control protocol as a client sees it: the v1
// wire objects (HTTP/JSON over a unix socket, versioned under /v1), the
// error classes, and the Go client the CLI is built on.
//
// It links no runtime: it imports the standard library alone, so a Go
// program that only talks to a running podsup does not carry the
// supervisor, the sandbox or the cgroup code (a test in this package
// builds the import graph of such a program and fails when one of them
// appears). The server that exposes a running supervisor over this
// protocol is package api/apiserver.
//
// The JSON of the wire objects is a stable format: `podsup ... -o json`
// prints exactly these objects. Fields are only ever added (with
// omitempty, so that older answers read the same), never renamed, retyped
// or removed; a golden test in package apiserver pins them.
//
// Besides the plain objects there are two composed views: GET
// /v1/describe/{group}[/{process}] (DescribeResponse) joins a group's
// status, the configuration in force, its cgroups' usage and its recent
// events in one answer, and GET /v1/status[...]?watch=true streams status
// changes as JSON lines shaped like a Kubernetes watch (WatchEvent): an
// ADDED line per group, a BOOKMARK that ends the initial state, then
// ADDED, MODIFIED and DELETED for each group that appeared, changed or
// went away (a reload), each holding the whole group, never a difference
// (a burst may arrive as one line). Before WatchEvent, the lines were
// StatusResponse differences that never said a group was gone; Client.Watch
// still reads those from an old podsup. GET
// /v1/status?usage=true adds each running process's cgroup usage (what
// `podsup top` shows), and GET /v1/logs/{group}/{process} takes tail,
// since (an RFC 3339 time), follow and previous (the last terminated
// instance, as the kubelet picks it); Client.LogsOf reads several
// processes and whole groups at once.
package api
