package supervisor

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/podsup/podsup/spec"
)

// Capabilities is what a Runtime can honour of a configuration beyond
// starting plain processes. Each field names the configuration it covers
// and the layer that provides it; a wrapper reports what its Next reports
// with its own capability added. The supervisor refuses a configuration
// that asks for something its Runtime lacks, at New and at Reload, rather
// than run it without: a group with a sandbox block on the host, a
// readiness protocol nobody serves, log rotation that never happens.
type Capabilities struct {
	// Sandboxes: a group's sandbox block (its namespaces, cgroup and
	// resources). stack.SandboxRuntime.
	Sandboxes bool
	// ReadinessProtocols: readiness = "notify" (with its watchdog) and
	// "fd:N". notify.Runtime with a Server.
	ReadinessProtocols bool
	// SocketActivation: sockets = [...], the fds systemd passed to podsup.
	// notify.Runtime.
	SocketActivation bool
	// OutputCapture: a process's log block (mode, max_size, max_files,
	// separate_streams; journal = true falls back to capture when podsup
	// is not under journald). podsup up's capture layer, package logs.
	OutputCapture bool
	// Journal: log { journal = true }. systemd.JournalRuntime.
	Journal bool

	// What the host keeps back. Unlike the capabilities above, these are
	// faults of podsup's own process (its credentials, its cgroup, the
	// fds it was started with) that no start or restart can get past:
	// a configuration that needs them is refused, with the fix, instead
	// of failing at every start in a back-off loop. The zero value keeps
	// nothing back.

	// NoNamespaces, when set, says why a sandbox's namespaces cannot be
	// made (podsup lacks CAP_SYS_ADMIN) and what to do.
	// stack.SandboxRuntime.
	NoNamespaces string
	// NoResourceLimits, when set, says why a sandbox's resources cannot be
	// enforced (no cgroup podsup may write) and what to do.
	// stack.SandboxRuntime.
	NoResourceLimits string
	// ActivationChecked says ActivationSockets is known: the names of the
	// sockets podsup was passed (LISTEN_FDNAMES), ":"-separated, as
	// LISTEN_FDNAMES spells them; "" for none. notify.Runtime.
	ActivationChecked bool
	ActivationSockets string
}

// ErrUnsupported is the class of a configuration its Runtime cannot
// honour (Capabilities.Check).
var ErrUnsupported = errors.New("not supported by the runtime")

// Check returns every part of cfg that c cannot honour, one
// spec.FieldError each, whose path names the group or process and the
// setting, and whose message the capability missing and who provides it; nil when c covers cfg. The error wraps ErrUnsupported
// and the spec.Errors (spec.AsErrors finds them).
func (c Capabilities) Check(cfg *spec.Config) error {
	var errs spec.Errors
	add := func(path []string, format string, args ...any) {
		errs = append(errs, &spec.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	for _, g := range cfg.Groups {
		gp := []string{"group", g.Name}
		if g.Sandbox != nil && !c.Sandboxes {
			add(fieldPath(gp, "sandbox"), "a sandbox block needs a runtime with sandboxes, and this one has none (stack.SandboxRuntime makes them)")
		}
		if sb := g.Sandbox; sb != nil && c.Sandboxes {
			if len(sb.Namespaces) > 0 && c.NoNamespaces != "" {
				add(fieldPath(gp, "sandbox", "namespaces"), "namespaces = [%s] cannot be made: %s", quoteAll(sb.Namespaces), c.NoNamespaces)
			}
			if sb.Resources != (spec.Resources{}) && c.NoResourceLimits != "" {
				add(fieldPath(gp, "sandbox", "resources"), "resource limits cannot be enforced: %s", c.NoResourceLimits)
			}
		}
		for _, pr := range g.Init {
			c.checkProcess(fieldPath(gp, "init", pr.Name), pr, add)
		}
		for _, pr := range g.Processes {
			c.checkProcess(fieldPath(gp, "process", pr.Name), pr, add)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n%w", ErrUnsupported, errs)
}

// checkProcess is Check for one process at path p.
func (c Capabilities) checkProcess(p []string, pr spec.Process, add func([]string, string, ...any)) {
	if pr.Resources != (spec.Resources{}) && c.Sandboxes && c.NoResourceLimits != "" {
		add(fieldPath(p, "resources"), "resource limits cannot be enforced: %s", c.NoResourceLimits)
	}
	if pr.Readiness != "" && !c.ReadinessProtocols {
		add(fieldPath(p, "readiness"), "readiness = %q needs a runtime that serves readiness protocols, and this one serves none (notify.Runtime with a Server does)", pr.Readiness)
	}
	if len(pr.Sockets) > 0 && !c.SocketActivation {
		add(fieldPath(p, "sockets"), "sockets = [%s] need a runtime that hands out activation sockets, and this one does not (notify.Runtime does)", quoteAll(pr.Sockets))
	}
	if len(pr.Sockets) > 0 && c.SocketActivation && c.ActivationChecked {
		if missing := missingSockets(pr.Sockets, c.ActivationSockets); len(missing) > 0 {
			add(fieldPath(p, "sockets"), "%s", SocketsMissing(missing, c.ActivationSockets))
		}
	}
	if captured := capturedLogSettings(pr.Log); len(captured) > 0 && !c.OutputCapture {
		add(fieldPath(p, "log"), "log settings (%s) need a runtime that captures output, and this one does not (podsup up's capture layer, package logs, does)", strings.Join(captured, ", "))
	}
	if pr.Log.Journal && !c.Journal && !c.OutputCapture {
		add(fieldPath(p, "log", "journal"), "journal = true needs a journal layer (systemd.JournalRuntime) or output capture to fall back on, and the runtime has neither")
	}
}

// capturedLogSettings names the settings of l that only output capture
// honours: everything in the block but journal. Even mode = "passthrough"
// needs the capture layer, which is what hands the process podsup's own
// stdout; stack.SandboxRuntime alone gives it /dev/null.
func capturedLogSettings(l spec.Log) []string {
	var set []string
	if l.Mode != "" {
		set = append(set, fmt.Sprintf("mode = %q", l.Mode))
	}
	if l.MaxSize != 0 {
		set = append(set, "max_size")
	}
	if l.MaxFiles != 0 {
		set = append(set, "max_files")
	}
	if l.SeparateStreams {
		set = append(set, "separate_streams")
	}
	if l.NoStdout {
		set = append(set, "stdout = false")
	}
	return set
}

func fieldPath(path []string, more ...string) []string {
	out := make([]string, 0, len(path)+len(more))
	return append(append(out, path...), more...)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// missingSockets are the names of want that passed (":"-separated) lacks.
func missingSockets(want []string, passed string) []string {
	have := strings.Split(passed, ":")
	var missing []string
	for _, n := range want {
		if passed == "" || !slices.Contains(have, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// SocketsMissing says that the sockets named missing were not passed to
// podsup (passed: LISTEN_FDNAMES, ":"-separated) and how to pass them.
func SocketsMissing(missing []string, passed string) string {
	got := "none: podsup was not socket-activated"
	if passed != "" {
		got = quoteAll(strings.Split(passed, ":"))
	}
	return fmt.Sprintf("no socket named %s was passed to podsup (passed: %s): start podsup from a systemd .socket unit with FileDescriptorName=%s, which passes it in LISTEN_FDNAMES",
		quoteAll(missing), got, missing[0])
}
