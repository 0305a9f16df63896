package proc

import "errors"

// errSecurityUnsupported refuses a Cmd with Security until Start applies
// it: a setting that is silently not applied would be worse than none.
var errSecurityUnsupported = errors.New("security settings cannot be applied yet")

// Security narrows what a started command may do, beyond its user
// (RunAs): Kubernetes' securityContext and systemd's sandboxing settings,
// as the kernel applies them to one process. The zero value changes
// nothing: the command gets what podsup's own thread has.
//
// Start applies every field in the one fork it makes, before the exec, in
// runc's order: capabilities and no_new_privs, then the seccomp filter
// last (the filter may deny what the steps before it need).
type Security struct {
	// Capabilities, when not nil, is the whole capability set the command
	// may hold: its bounding set, and its permitted, effective and
	// inheritable sets (a command running as uid 0 gets them at exec); a
	// command of another user gets them as ambient capabilities too, as
	// runc gives them. nil leaves podsup's sets as they are (all, for a
	// root podsup).
	Capabilities *CapSet
	// NoNewPrivs sets PR_SET_NO_NEW_PRIVS: neither the command nor
	// anything it execs gains privileges through setuid or file
	// capabilities.
	NoNewPrivs bool
	// Seccomp, when not nil, is the filter the command runs under
	// (SECCOMP_SET_MODE_FILTER), compiled for the running architecture.
	Seccomp *SeccompFilter
	// Umask, when not nil, is the command's file mode creation mask.
	Umask *uint32
	// Rlimits are resource limits (setrlimit) set for the command.
	Rlimits []Rlimit
	// OOMScoreAdj, when not nil, is written to the command's
	// /proc/PID/oom_score_adj (-1000..1000).
	OOMScoreAdj *int
}

// CapSet is a set of capabilities, bit n for capability number n (as
// <linux/capability.h> numbers them: CAP_CHOWN is 0).
type CapSet uint64

// Rlimit is one resource limit: Resource is a RLIMIT_* number.
type Rlimit struct {
	Resource   int
	Soft, Hard uint64
}

// SeccompFilter is a compiled classic-BPF seccomp program.
type SeccompFilter struct {
	// Program is the filter's instructions, as SECCOMP_SET_MODE_FILTER
	// takes them (struct sock_filter).
	Program []SockFilter
	// Name says where the filter came from, for messages
	// ("runtime/default", a profile's path).
	Name string
}

// SockFilter is one classic BPF instruction (struct sock_filter).
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}
