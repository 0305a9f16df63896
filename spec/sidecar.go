package spec

// A sidecar is an init with restart_policy = "always": Kubernetes'
// restartable init container (KEP-753). It starts in its place among the
// inits, lets the next one start once it has started, and then runs
// beside the main processes for the group's whole life
// (docs/semantics.md O1–O7). An init takes no other restart policy.

// IsSidecar reports whether init, an entry of a group's Init, is a
// sidecar.
func IsSidecar(init *Process) bool { return init.RestartPolicy == RestartAlways }
