package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/sandbox/seccomp"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// StartSecurity is the proc.Security pr's command starts with: what
// SecurityOf makes of its (effective) security context. A process that
// sets none starts with nil (every capability podsup has, as before there
// were security contexts) unless it runs as root in a sandbox, where it
// gets the container engines' default capability set as it would in a
// container (docs/security.md, "The default capability set"). sandboxed
// is whether pr's group has a sandbox block, not only a cgroup. The start
// fails with the error, which names the setting.
func StartSecurity(pr spec.Process, sandboxed bool) (*proc.Security, error) {
	if pr.Security.IsZero() && !sandboxed {
		return nil, nil // every restart's case: no user to look at
	}
	root := RunsAsRoot(pr.User)
	if pr.Security.IsZero() && !root {
		return nil, nil
	}
	return SecurityOf(pr.Security, sandboxed, root)
}

// RunsAsRoot reports whether a process of user u runs as uid 0: u is
// "root", "0" or a name of uid 0, or empty under a root podsup. A name
// that cannot be looked up is not root (its start fails on the name).
func RunsAsRoot(u string) bool {
	switch u {
	case "":
		return os.Geteuid() == 0
	case "0", "root":
		return true
	}
	if _, err := strconv.Atoi(u); err == nil {
		return false
	}
	if uu, err := user.Lookup(u); err == nil {
		return uu.Uid == "0"
	}
	return false
}

// SecurityOf is the one place a security context becomes what the kernel
// applies (the rest of the run context is RunAs). Capabilities follow
// the container engines for a root process in a sandbox: runc's default
// set (spec.DefaultCapabilities) unless privileged, then drop, then
// add. A root process on the host keeps every capability podsup has,
// unless privileged = false asks for the default set or a capabilities
// block narrows it: a host group is podsup's own service, which today's
// configurations run with root's powers. A process of another user starts
// from no capability at all, and holds only what add names (as ambient
// capabilities too, which carry them across its exec).
func SecurityOf(s spec.Security, sandboxed, root bool) (*proc.Security, error) {
	if spec.IsSet(s.RunAsNonRoot) && root {
		return nil, errors.New("run_as_non_root: the process would run as uid 0: set user to another user")
	}
	out := &proc.Security{NoNewPrivs: spec.IsSet(s.NoNewPrivileges), Umask: s.Umask, OOMScoreAdj: s.OOMScoreAdj}
	caps, err := capabilitiesOf(s, sandboxed, root)
	if err != nil {
		return nil, err
	}
	out.Capabilities = caps
	for _, name := range s.SortedRlimitNames() {
		r := s.Rlimits[name]
		n, ok := rlimitResource[name]
		if !ok {
			return nil, fmt.Errorf("rlimits: %q is not a resource limit", name)
		}
		out.Rlimits = append(out.Rlimits, proc.Rlimit{Resource: n, Soft: r.Soft, Hard: r.Hard})
	}
	switch s.Seccomp {
	case "", spec.SeccompUnconfined:
	default:
		// The profile is compiled for the capabilities the process keeps:
		// runtime/default allows, as Docker's does, the calls that a
		// capability it holds grants (CAP_SYS_ADMIN's mount, ...).
		f, err := seccomp.Named(s.Seccomp, keptCaps(caps, root))
		if err != nil {
			return nil, fmt.Errorf("seccomp = %q: %w", s.Seccomp, err)
		}
		out.Seccomp = f
	}
	return out, nil
}

// keptCaps is what a process with capability set caps (nil: podsup's
// own, left alone) holds after its exec: a root process keeps podsup's,
// every one; another user none but its ambient ones.
func keptCaps(caps *proc.CapSet, root bool) proc.CapSet {
	switch {
	case caps != nil:
		return *caps
	case root:
		return AllCaps()
	}
	return 0
}

// capabilitiesOf is SecurityOf's capability set: nil to keep podsup's.
func capabilitiesOf(s spec.Security, sandboxed, root bool) (*proc.CapSet, error) {
	if spec.IsSet(s.Privileged) {
		return nil, nil
	}
	optedIn := s.Privileged != nil // privileged = false, written out
	var base proc.CapSet
	switch {
	case !root:
		if s.Capabilities == nil && !optedIn {
			return nil, nil // it has none to lose; its bounding set stays podsup's
		}
	case sandboxed || optedIn:
		base = DefaultCapSet()
	case s.Capabilities == nil:
		return nil, nil
	default:
		base = AllCaps()
	}
	if c := s.Capabilities; c != nil {
		for _, n := range c.Drop {
			if spec.IsAllCapabilities(n) {
				base = 0
				continue
			}
			i, ok := spec.CapabilityNumber(n)
			if !ok {
				return nil, fmt.Errorf("capabilities.drop: %q is not a Linux capability", n)
			}
			base &^= 1 << i
		}
		for _, n := range c.Add {
			if spec.IsAllCapabilities(n) {
				base = AllCaps()
				continue
			}
			i, ok := spec.CapabilityNumber(n)
			if !ok {
				return nil, fmt.Errorf("capabilities.add: %q is not a Linux capability", n)
			}
			base |= 1 << i
		}
	}
	base &= AllCaps() // the kernel's own: a newer name than it knows is no capability
	return &base, nil
}

// DefaultCapSet is spec.DefaultCapabilities as a set.
func DefaultCapSet() proc.CapSet {
	var s proc.CapSet
	for _, n := range spec.DefaultCapabilities {
		i, _ := spec.CapabilityNumber(n)
		s |= 1 << i
	}
	return s
}

// AllCaps is every capability the running kernel has
// (/proc/sys/kernel/cap_last_cap), or every one podsup knows.
func AllCaps() proc.CapSet {
	last := len(spec.CapabilityNames) - 1
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < 64 {
			last = n
		}
	}
	return proc.CapSet(1)<<(last+1) - 1
}

// CapNames names the capabilities of s, in number order, without CAP_;
// one the table does not know is "CAP_N".
func CapNames(s proc.CapSet) []string {
	var out []string
	for i := 0; i < 64; i++ {
		if s&(1<<i) == 0 {
			continue
		}
		if i < len(spec.CapabilityNames) {
			out = append(out, spec.CapabilityNames[i])
		} else {
			out = append(out, "CAP_"+strconv.Itoa(i))
		}
	}
	return out
}

// rlimitResource maps spec.RlimitNames to RLIMIT_* numbers.
var rlimitResource = map[string]int{
	"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU, "data": unix.RLIMIT_DATA,
	"fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS, "memlock": unix.RLIMIT_MEMLOCK,
	"msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE, "nofile": unix.RLIMIT_NOFILE,
	"nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS, "rtprio": unix.RLIMIT_RTPRIO,
	"rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK,
}
