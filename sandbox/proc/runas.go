package proc

// RunAs is the context a command runs in besides its argv: environment,
// working directory, user and group. It is declared once, here, and
// embedded by every layer that starts a command (Cmd, sandbox's
// ProcessConfig, execrun's Request, probes' ExecContext, hooks' Runner);
// supervisor.RunAs makes it of a spec.Process.
type RunAs struct {
	// Env is the environment; nil means podsup's own. A command without a
	// slash is looked up in its PATH.
	Env []string
	// Dir is the working directory; empty means podsup's own.
	Dir string
	// User and Group are names or numeric ids; empty means podsup's own.
	// A user brings its primary group and supplementary groups.
	User, Group string
	// Groups are supplementary groups, names or numeric ids, added to
	// those User brings (Kubernetes' supplementalGroups).
	Groups []string
}
