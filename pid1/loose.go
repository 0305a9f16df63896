package pid1

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// Signals 32 and 34 have no Go handler, so their default action would end
// podsup: 32 (never forwarded) and 34. Where redirect.go's handler exists,
// Run installs it for both before anything else, and exec puts a handler
// back to the default, so the child gets both as usual. Without it (the
// podsup_portable build, architectures without the handler) Run ignores
// them instead, also before anything else: ignored only once the child ran,
// as before, one sent in the moment between the fork and that left podsup
// dead and its child orphaned. But an ignored disposition survives execve,
// and the child must start with both at their default, as it would under a
// shell; syscall.ForkExec has no way to change a disposition between its
// fork and its exec. So the child execs podsup itself first, through
// /proc/self/exe, with looseArg: the package's init below puts the
// signals Run ignored back to the default and execs the command, before
// anything else of podsup runs. No window remains on either side: podsup
// ignores them throughout, and the command never runs with them ignored.

// looseSignals have no Go handler, so their default action would end
// podsup.
var looseSignals = []syscall.Signal{32, 34}

// looseIgnored is the set of looseSignals that Run set to SIG_IGN (from
// SIG_DFL), which its children get back at the default. One that the
// program was started with ignored is not in it: it stays ignored for the
// children too, as it would under a shell.
var looseIgnored atomic.Uint64

// ignoreLoose sets looseSignals that are at their default to SIG_IGN and
// records them in looseIgnored.
func ignoreLoose() {
	for _, sig := range looseSignals {
		if ignoreIfDefault(sig) {
			looseIgnored.Or(uint64(sigsetOf(sig)))
		}
	}
}

// looseArg marks the exec of podsup that is the child's first step.
const looseArg = "__podsup_pid1_sigdfl"

// selfExe is how the child names podsup's binary.
const selfExe = "/proc/self/exe"

func init() {
	if len(os.Args) >= 5 && os.Args[1] == looseArg {
		os.Exit(looseMain(os.Args[2], os.Args[3], os.Args[4:]))
	}
}

// looseMain puts the signals of set (a sigset, in decimal) back to SIG_DFL
// and execs path with argv and the environment it was given; it returns
// only on failure, with the shell's exit code for it.
func looseMain(set, path string, argv []string) int {
	n, err := strconv.ParseUint(set, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "podsup: %s: bad signal set %q\n", path, set)
		return 126
	}
	for sig := syscall.Signal(1); sig <= sigRTMax; sig++ {
		if sigset(n).has(sig) {
			restoreDefault(sig)
		}
	}
	err = unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "podsup: %s: %v\n", path, err)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return 127
	}
	return 126
}

// childCmd is the proc.Cmd that starts argv: through looseMain when Run
// has ignored signals the child must not inherit ignored. The command is
// looked up here, as proc.Start would, so that a command that is not
// there, or may not be run, is told the same way (a StartError) either
// way. Without /proc the child is started directly (startChild).
func childCmd(o Options) (*proc.Cmd, error) {
	c := &proc.Cmd{
		Path: o.Argv[0], Args: o.Argv,
		Stdin:      or(o.Stdin, os.Stdin),
		Stdout:     or(o.Stdout, os.Stdout),
		Stderr:     or(o.Stderr, os.Stderr),
		Foreground: true,
	}
	set := looseIgnored.Load()
	if set == 0 || unix.Access(selfExe, unix.X_OK) != nil {
		return c, nil
	}
	path, err := proc.LookPathAs(o.Argv[0], os.Environ(), "", nil)
	if err != nil {
		return nil, &proc.StartError{Path: o.Argv[0], Err: err}
	}
	// The exec of path is looseMain's; the usual reason it would fail is
	// told here, as proc.Start tells it.
	var errno syscall.Errno
	if _, err := os.Stat(path); errors.As(err, &errno) && (errno == syscall.ENOENT || errno == syscall.ENOTDIR) {
		return nil, &proc.StartError{Path: o.Argv[0], Err: fmt.Errorf("%w (%v)", proc.ErrCommandNotFound, errno)}
	}
	c.Path = selfExe
	c.Args = append([]string{"podsup", looseArg, strconv.FormatUint(set, 10), path}, o.Argv...)
	return c, nil
}
