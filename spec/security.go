package spec

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Security is a process's security context: what it may do beyond its
// user (Process.User, Process.Group), with Kubernetes' securityContext
// names. On a Group it holds the defaults of the group's processes, as a
// pod-level securityContext does; a process's field overrides the
// group's field by field (EffectiveSecurity). The zero value sets
// nothing: the process keeps what podsup's own thread has.
//
// The filesystem settings (a read-only root, private /tmp, masked paths)
// are the sandbox's: its processes share one mount namespace.
type Security struct {
	// RunAsNonRoot refuses to start the process when it would run as uid
	// 0 (Kubernetes' runAsNonRoot).
	RunAsNonRoot *bool
	// SupplementalGroups are group names or numeric gids the process
	// gets besides its user's own (supplementalGroups).
	SupplementalGroups []string
	// Umask is the file mode creation mask, 0..0777.
	Umask *uint32
	// Privileged keeps every capability podsup has. nil means the
	// default of where the process runs (DefaultCapabilities): false
	// written out asks for the container engines' default set anywhere.
	Privileged *bool
	// Capabilities adds to and drops from the process's base set.
	Capabilities *Capabilities
	// NoNewPrivileges sets no_new_privs (allowPrivilegeEscalation:
	// false): no setuid or file capability raises what the process, or
	// what it execs, may do.
	NoNewPrivileges *bool
	// Seccomp is "runtime/default", "unconfined" or the absolute path of
	// an OCI/Docker JSON profile; "" is unset.
	Seccomp string
	// Rlimits are resource limits by systemd's LimitX= name in lower case
	// ("nofile", "core"; RlimitNames).
	Rlimits map[string]Rlimit
	// OOMScoreAdj is /proc/PID/oom_score_adj, -1000..1000.
	OOMScoreAdj *int
}

// Capabilities changes a capability set: Drop is taken away first, then
// Add added (drop ALL, add NET_BIND_SERVICE keeps only that one). Names
// are spelled with or without "CAP_", in any case; "ALL" is every one.
type Capabilities struct {
	Add, Drop []string
}

// Rlimit is a soft and a hard limit; RlimitInfinity is no limit.
type Rlimit struct {
	Soft, Hard uint64
}

// RlimitInfinity is RLIM_INFINITY: no limit.
const RlimitInfinity = ^uint64(0)

// Seccomp profiles built into podsup.
const (
	SeccompRuntimeDefault = "runtime/default"
	SeccompUnconfined     = "unconfined"
)

// RlimitNames are the resource limits a Security may set, as systemd's
// LimitCPU=, LimitNOFILE=, ... name them, in lower case.
var RlimitNames = []string{"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue",
	"nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}

// CapabilityNames are the Linux capabilities by number, without "CAP_".
var CapabilityNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// DefaultCapabilities is the set runc and containerd give a container
// that is not privileged, and podsup a root process in a sandbox.
var DefaultCapabilities = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// CapabilityNumber is the number of a capability named with or without
// "CAP_", in any case; false for an unknown name (and for "ALL").
func CapabilityNumber(name string) (int, bool) {
	i := slices.Index(CapabilityNames, canonicalCap(name))
	return i, i >= 0
}

// canonicalCap is name without "CAP_", in upper case.
func canonicalCap(name string) string {
	return strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "CAP_")
}

// IsAllCapabilities reports whether name is "ALL" (or "CAP_ALL").
func IsAllCapabilities(name string) bool { return canonicalCap(name) == "ALL" }

// IsZero reports whether s sets nothing.
func (s Security) IsZero() bool {
	return s.RunAsNonRoot == nil && len(s.SupplementalGroups) == 0 && s.Umask == nil &&
		s.Privileged == nil && s.Capabilities == nil && s.NoNewPrivileges == nil &&
		s.Seccomp == "" && len(s.Rlimits) == 0 && s.OOMScoreAdj == nil
}

// Over returns s with every field it leaves unset taken from base: a
// process's context over its group's. Rlimits merge by name.
func (s Security) Over(base Security) Security {
	out := base
	if s.RunAsNonRoot != nil {
		out.RunAsNonRoot = s.RunAsNonRoot
	}
	if s.SupplementalGroups != nil {
		out.SupplementalGroups = s.SupplementalGroups
	}
	if s.Umask != nil {
		out.Umask = s.Umask
	}
	if s.Privileged != nil {
		out.Privileged = s.Privileged
	}
	if s.Capabilities != nil {
		out.Capabilities = s.Capabilities
	}
	if s.NoNewPrivileges != nil {
		out.NoNewPrivileges = s.NoNewPrivileges
	}
	if s.Seccomp != "" {
		out.Seccomp = s.Seccomp
	}
	if s.OOMScoreAdj != nil {
		out.OOMScoreAdj = s.OOMScoreAdj
	}
	if len(s.Rlimits) > 0 {
		m := make(map[string]Rlimit, len(base.Rlimits)+len(s.Rlimits))
		for k, v := range base.Rlimits {
			m[k] = v
		}
		for k, v := range s.Rlimits {
			m[k] = v
		}
		out.Rlimits = m
	}
	return out
}

// EffectiveSecurity is p's security context with g's as its defaults.
func EffectiveSecurity(g *Group, p *Process) Security {
	if g == nil {
		return p.Security
	}
	s := p.Security.Over(g.Security)
	// The group's fs_group owns its volumes: every process is in it, as
	// kubelet adds a pod's fsGroup to each container's groups.
	if g.FSGroup != "" && !slices.Contains(s.SupplementalGroups, g.FSGroup) {
		s.SupplementalGroups = append(slices.Clone(s.SupplementalGroups), g.FSGroup)
	}
	return s
}

// WithGroupSecurity returns p with its Security made effective under g:
// what the process is started with.
func WithGroupSecurity(g *Group, p Process) Process {
	p.Security = EffectiveSecurity(g, &p)
	return p
}

// Bool returns a pointer to b, for the optional flags of Security.
func Bool(b bool) *bool { return &b }

// IsSet reports whether the optional flag b is set to true.
func IsSet(b *bool) bool { return b != nil && *b }

// ParseUmask reads an octal umask ("0027", "027", "0o027").
func ParseUmask(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O")
	n, err := strconv.ParseUint(t, 8, 32)
	if err != nil || n > 0o777 || t == "" {
		return 0, &FieldError{Msg: "umask must be an octal mode from \"0000\" to \"0777\", e.g. \"0027\"; got " + strconv.Quote(s)}
	}
	return uint32(n), nil
}

// FormatUmask writes a umask as the configuration does: "0027".
func FormatUmask(m uint32) string {
	return "0" + strings.TrimPrefix(strconv.FormatUint(uint64(m)|0o1000, 8), "1")
}

// ParseRlimit reads a limit written as "SOFT:HARD" or one value for both;
// each value is a number or "infinity" ("unlimited").
func ParseRlimit(s string) (Rlimit, error) {
	soft, hard, two := strings.Cut(s, ":")
	sv, err := parseRlimitValue(soft)
	if err != nil {
		return Rlimit{}, err
	}
	if !two {
		return Rlimit{Soft: sv, Hard: sv}, nil
	}
	hv, err := parseRlimitValue(hard)
	if err != nil {
		return Rlimit{}, err
	}
	return Rlimit{Soft: sv, Hard: hv}, nil
}

func parseRlimitValue(s string) (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "infinity", "unlimited":
		return RlimitInfinity, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, &FieldError{Msg: "a limit is a number, \"infinity\" or \"SOFT:HARD\" of them, e.g. 1024 or \"1024:4096\"; got " + strconv.Quote(s)}
	}
	return n, nil
}

// String writes r as ParseRlimit reads it.
func (r Rlimit) String() string {
	v := func(n uint64) string {
		if n == RlimitInfinity {
			return "infinity"
		}
		return strconv.FormatUint(n, 10)
	}
	if r.Soft == r.Hard {
		return v(r.Soft)
	}
	return v(r.Soft) + ":" + v(r.Hard)
}

// SortedRlimitNames are the names s sets limits for, sorted.
func (s Security) SortedRlimitNames() []string {
	names := make([]string, 0, len(s.Rlimits))
	for n := range s.Rlimits {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// security validates one Security at p (a process or a group).
func (ch *checker) security(p []string, s *Security, user string) {
	for i, g := range s.SupplementalGroups {
		if strings.TrimSpace(g) == "" {
			ch.add(at(p, "supplemental_groups"), "supplemental_groups[%d] is empty: give a group name or a numeric gid", i)
		}
	}
	if s.Umask != nil && *s.Umask > 0o777 {
		ch.add(at(p, "umask"), "umask must be from 0000 to 0777, got %o", *s.Umask)
	}
	if c := s.Capabilities; c != nil {
		for _, list := range []struct {
			field string
			names []string
		}{{"add", c.Add}, {"drop", c.Drop}} {
			for _, n := range list.names {
				if _, ok := CapabilityNumber(n); !ok && !IsAllCapabilities(n) {
					ch.add(at(p, "capabilities", list.field), "%q is not a Linux capability: write one of capabilities(7)'s names, with or without \"CAP_\" (\"NET_BIND_SERVICE\", \"CAP_CHOWN\"), or \"ALL\"", n)
				}
			}
		}
		if IsSet(s.Privileged) && len(c.Drop) > 0 {
			ch.add(at(p, "capabilities", "drop"), "privileged = true keeps every capability: drop none, or leave privileged unset")
		}
	}
	switch sc := s.Seccomp; {
	case sc == "", sc == SeccompRuntimeDefault, sc == SeccompUnconfined:
	case !filepath.IsAbs(sc):
		ch.add(at(p, "seccomp"), "seccomp %q is not \"runtime/default\", \"unconfined\" or the absolute path of an OCI/Docker JSON profile", sc)
	default:
		if fi, err := os.Stat(sc); err != nil || !fi.Mode().IsRegular() {
			ch.add(at(p, "seccomp"), "seccomp profile %q is not a regular file podsup can read", sc)
		}
	}
	if IsSet(s.Privileged) && s.Seccomp != "" && s.Seccomp != SeccompUnconfined {
		ch.add(at(p, "seccomp"), "privileged = true runs unconfined: a seccomp profile would be ignored, as Kubernetes ignores one on a privileged container; remove one of them")
	}
	for _, name := range s.SortedRlimitNames() {
		r := s.Rlimits[name]
		if !slices.Contains(RlimitNames, name) {
			ch.add(at(p, "rlimits", name), "%q is not a resource limit: use one of %s", name, strings.Join(RlimitNames, ", "))
			continue
		}
		if r.Soft > r.Hard {
			ch.add(at(p, "rlimits", name), "the soft limit %s is above the hard limit %s", Rlimit{r.Soft, r.Soft}, Rlimit{r.Hard, r.Hard})
		}
	}
	if o := s.OOMScoreAdj; o != nil && (*o < -1000 || *o > 1000) {
		ch.add(at(p, "oom_score_adj"), "oom_score_adj must be from -1000 to 1000, got %d", *o)
	}
	if IsSet(s.RunAsNonRoot) && (user == "0" || user == "root") {
		ch.add(at(p, "run_as_non_root"), "run_as_non_root refuses a process that runs as root, and user = %q is root", user)
	}
}
