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
// prints exactly these objects.
package api
