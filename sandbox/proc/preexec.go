package proc

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The pre-exec shim: what must be done in the child itself and is not a
// thread's to inherit. Resource limits are per process (a profile thread
// cannot hold them for its children), and a seccomp filter that denies
// clone3 cannot sit on the thread of a fork into a cgroup, which is a
// clone3 (SeccompFilter.AllowsClone3). For those, the child execs
// podsup's own binary first, through /proc/self/exe (the running binary,
// whatever mount namespace the child is in, as long as it has a /proc),
// with preexecArg: the package's init below applies them and execs the
// command, before anything else of podsup runs. It costs an exec of
// podsup's binary, so Start takes it only when a Security needs it; every
// other setting is applied on the profile thread (profilethread.go).
const preexecArg = "__podsup_preexec"

// selfExe is how the child names podsup's binary.
const selfExe = "/proc/self/exe"

func init() {
	if len(os.Args) >= 5 && os.Args[1] == preexecArg {
		os.Exit(preexecMain(os.Args[2], os.Args[3], os.Args[4:]))
	}
}

// preexec is what the shim applies.
type preexec struct {
	rlimits []Rlimit
	seccomp *SeccompFilter
}

func (p preexec) needed() bool { return len(p.rlimits) > 0 || p.seccomp != nil }

// encode is p as one argument: "r<res>:<soft>:<hard>" items and one
// "s<hex program>", comma-separated.
func (p preexec) encode() string {
	var items []string
	for _, r := range p.rlimits {
		items = append(items, fmt.Sprintf("r%d:%d:%d", r.Resource, r.Soft, r.Hard))
	}
	if f := p.seccomp; f != nil {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&f.Program[0])), len(f.Program)*int(unsafe.Sizeof(f.Program[0])))
		items = append(items, "s"+hex.EncodeToString(b))
	}
	return strings.Join(items, ",")
}

func decodePreexec(s string) (preexec, error) {
	var p preexec
	for _, item := range strings.Split(s, ",") {
		switch {
		case strings.HasPrefix(item, "r"):
			f := strings.Split(item[1:], ":")
			if len(f) != 3 {
				return p, fmt.Errorf("bad rlimit %q", item)
			}
			res, err1 := strconv.Atoi(f[0])
			soft, err2 := strconv.ParseUint(f[1], 10, 64)
			hard, err3 := strconv.ParseUint(f[2], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				return p, err
			}
			p.rlimits = append(p.rlimits, Rlimit{Resource: res, Soft: soft, Hard: hard})
		case strings.HasPrefix(item, "s"):
			b, err := hex.DecodeString(item[1:])
			if err != nil || len(b) == 0 || len(b)%8 != 0 {
				return p, fmt.Errorf("bad seccomp program")
			}
			prog := make([]SockFilter, len(b)/8)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), len(b)), b)
			p.seccomp = &SeccompFilter{Program: prog, Name: "the profile"}
		}
	}
	return p, nil
}

// preexecMain applies settings and execs path with argv and the
// environment it was given; it returns only on failure, with the shell's
// exit code for it.
func preexecMain(settings, path string, argv []string) int {
	runtime.LockOSThread() // the filter is this thread's: exec from it
	p, err := decodePreexec(settings)
	if err != nil {
		fmt.Fprintf(os.Stderr, "podsup: %s: %v\n", path, err)
		return 126
	}
	for _, r := range p.rlimits {
		if err := unix.Prlimit(0, r.Resource, &unix.Rlimit{Cur: r.Soft, Max: r.Hard}, nil); err != nil {
			fmt.Fprintf(os.Stderr, "podsup: %s: rlimits: resource %d to %d/%d: %v\n", path, r.Resource, r.Soft, r.Hard, err)
			return 126
		}
	}
	if p.seccomp != nil {
		// Last, as on a profile thread. Without CAP_SYS_ADMIN (a command
		// of another user) the kernel takes a filter only under
		// no_new_privs: the command gets it too.
		err := installSeccomp(p.seccomp)
		if err == unix.EACCES {
			if err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err == nil {
				err = installSeccomp(p.seccomp)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "podsup: %s: seccomp: %v\n", path, err)
			return 126
		}
	}
	err = unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "podsup: %s: %v\n", path, err)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return 127
	}
	return 126
}

// preexecArgv is what the child execs instead of path and args.
func preexecArgv(p preexec, path string, args []string) (string, []string) {
	return selfExe, append([]string{"podsup-preexec", preexecArg, p.encode(), path}, args...)
}

// ErrWouldRunAsRoot is Start's refusal of a Cmd with NotRoot whose user is
// root.
var ErrWouldRunAsRoot = errors.New("would run as root")
