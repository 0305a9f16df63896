package proc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// Security narrows what a started command may do, beyond its user
// (RunAs): Kubernetes' securityContext and systemd's sandboxing settings,
// as the kernel applies them to one process. The zero value changes
// nothing: the command gets what podsup's own thread has.
//
// Start applies every field in the one fork it makes, before the exec, in
// runc's order: the sandbox's namespaces, the umask, capabilities and
// no_new_privs, then the seccomp filter last (the filter may deny what the
// steps before it need). How, without code between fork and exec, is in
// profilethread.go.
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
	// The fork runs under it too: it must allow the system calls of
	// ForkSyscalls (package seccomp refuses a profile that does not).
	Seccomp *SeccompFilter
	// Umask, when not nil, is the command's file mode creation mask.
	Umask *uint32
	// Rlimits are resource limits (setrlimit) set for the command. They
	// are per process, not per thread, so they cost the command a
	// re-exec of podsup's binary before its own (preexec.go).
	Rlimits []Rlimit
	// OOMScoreAdj, when not nil, is written to the command's
	// /proc/PID/oom_score_adj (-1000..1000) right after the exec: its
	// first instructions run with podsup's score.
	OOMScoreAdj *int
}

// CapSet is a set of capabilities, bit n for capability number n (as
// <linux/capability.h> numbers them: CAP_CHOWN is 0).
type CapSet uint64

// Has reports whether capability number c is in s.
func (s CapSet) Has(c int) bool { return c >= 0 && c < 64 && s&(1<<c) != 0 }

// list is s as capability numbers, as SysProcAttr.AmbientCaps takes them.
func (s CapSet) list() []uintptr {
	var l []uintptr
	for c := 0; c < 64; c++ {
		if s.Has(c) {
			l = append(l, uintptr(c))
		}
	}
	return l
}

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
	// AllowsClone3 says the filter lets clone3 through. A fork into a
	// cgroup (CLONE_INTO_CGROUP) is a clone3, made under the filter; a
	// filter that denies it (runtime/default does, as Docker's: its
	// namespace flags are out of a filter's reach) is installed by the
	// pre-exec shim instead (preexec.go).
	AllowsClone3 bool
	// KillsUnlisted says the filter kills (or traps) a call it does not
	// list. Such a filter is installed by the pre-exec shim, in the child,
	// never on a podsup thread: a call of the Go runtime's that the list
	// lacks would kill podsup itself.
	KillsUnlisted bool
}

// SockFilter is one classic BPF instruction (struct sock_filter).
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// ForkSyscalls are the system calls a spawning thread makes under its
// seccomp filter (profilethread.go): the Go runtime's own on that thread
// (memory, futexes, signals, the vfork clone, the exit of the thread) and
// those of syscall.ForkExec's child before its exec. A filter installed
// there must allow each of them, with the arguments Go uses; package
// seccomp refuses a profile that does not, naming the call, rather than
// adding them behind the profile's back. clone3 is not among them: see
// SeccompFilter.AllowsClone3.
var ForkSyscalls = []string{
	// The Go runtime on the thread.
	"futex", "mmap", "munmap", "madvise", "mprotect", "rt_sigreturn",
	"rt_sigprocmask", "rt_sigaction", "sigaltstack", "tgkill", "getpid",
	"gettid", "nanosleep", "sched_yield", "clock_gettime", "getrandom",
	"exit", "exit_group", "restart_syscall",
	// ForkExec in the parent: the error pipe, the vfork, the wait for a
	// child whose exec failed; then the pidfd's checks and close.
	"pipe2", "clone", "read", "write", "close", "wait4", "waitid",
	"pidfd_send_signal", "openat",
	// ForkExec's child before the exec.
	"setgroups", "setgid", "setuid", "setpgid", "setsid", "ioctl",
	"dup3", "fcntl", "chdir", "prctl", "capget", "capset", "execve",
}

// SecurityError says which security setting could not be applied.
type SecurityError struct {
	Setting string // capabilities, no_new_privileges, seccomp, umask, rlimits, oom_score_adj
	Err     error
}

func (e *SecurityError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SecurityError) Unwrap() error { return e.Err }

// ErrInvalidSecurity is a Security Start refuses before forking.
var ErrInvalidSecurity = errors.New("invalid security setting")

func (s *Security) validate() error {
	bad := func(setting, format string, a ...any) error {
		return &SecurityError{Setting: setting, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidSecurity}, a...)...)}
	}
	if s.Umask != nil && *s.Umask > 0o777 {
		return bad("umask", "%#o is not a mode", *s.Umask)
	}
	if s.OOMScoreAdj != nil && (*s.OOMScoreAdj < -1000 || *s.OOMScoreAdj > 1000) {
		return bad("oom_score_adj", "%d is outside -1000..1000", *s.OOMScoreAdj)
	}
	for _, r := range s.Rlimits {
		if r.Resource < 0 || r.Resource >= rlimitCount || r.Soft > r.Hard {
			return bad("rlimits", "resource %d: soft %d above hard %d, or no such resource", r.Resource, r.Soft, r.Hard)
		}
	}
	if s.Seccomp != nil && (len(s.Seccomp.Program) == 0 || len(s.Seccomp.Program) > 4096) {
		return bad("seccomp", "filter %q has %d instructions (1..4096)", s.Seccomp.Name, len(s.Seccomp.Program))
	}
	return nil
}

// rlimitCount is RLIM_NLIMITS.
const rlimitCount = 16

// threadProfile is what a profile thread applies to itself: Security
// without the per-process settings (rlimits, oom_score_adj), and without
// the filter when the pre-exec shim installs it.
type threadProfile struct {
	caps    *CapSet
	nnp     bool
	umask   *uint32
	seccomp *SeccompFilter
}

func (tp threadProfile) empty() bool {
	return tp.caps == nil && !tp.nnp && tp.umask == nil && tp.seccomp == nil
}

// key tells profiles apart by content, not by pointer: every spawn of the
// same settings shares one thread, whoever compiled its filter.
func (tp threadProfile) key() string {
	var b strings.Builder
	if tp.caps != nil {
		b.WriteString("c" + strconv.FormatUint(uint64(*tp.caps), 16))
	}
	if tp.nnp {
		b.WriteString("n")
	}
	if tp.umask != nil {
		b.WriteString("u" + strconv.FormatUint(uint64(*tp.umask), 8))
	}
	if f := tp.seccomp; f != nil {
		b.WriteString("s")
		b.WriteString(unsafe.String((*byte)(unsafe.Pointer(&f.Program[0])), len(f.Program)*int(unsafe.Sizeof(f.Program[0]))))
	}
	return b.String()
}
