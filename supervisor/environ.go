package supervisor

import (
	"os"
	"sort"
	"strings"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// RunAs is the context pr's command runs in, and so do its exec probes
// and hooks and a podsup exec as pr: its environment (Environ of its
// Env), working directory, user, group and supplementary groups (its
// security context's supplemental_groups: give pr with its group's
// context made effective, spec.WithGroupSecurity).
func RunAs(pr spec.Process) proc.RunAs {
	return proc.RunAs{Env: Environ(pr.Env), Dir: pr.WorkingDir, User: pr.User, Group: pr.Group,
		Groups: pr.Security.SupplementalGroups}
}

// Environ is podsup's environment with extra on top, in a stable order:
// what a process, exec probe or hook of a spec.Process with Env extra gets.
// nil (no extra) means podsup's own, as package sandbox reads a nil Env.
func Environ(extra map[string]string) []string {
	if len(extra) == 0 {
		return nil // sandbox: nil means podsup's own
	}
	env := os.Environ()
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(env)+len(keys))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, override := extra[name]; !override {
			out = append(out, kv)
		}
	}
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}
