package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Cmd.NoNewPrivs: syscall.ForkExec cannot set PR_SET_NO_NEW_PRIVS in the
// child, and setting it on the forking thread would taint that thread for
// good (the flag cannot be cleared), a sandbox's namespace thread
// included. So the child execs podsup itself first, through
// /proc/self/exe (the running binary, whatever mount namespace the child
// is in, as long as it has a /proc), with noNewPrivsArg: the package's
// init below sets the flag and execs the command, before anything else of
// podsup runs. After that no execve raises the command's privileges: a
// setuid or file-capability binary runs with the caller's.
const noNewPrivsArg = "__podsup_no_new_privs"

// selfExe is how the child names podsup's binary.
const selfExe = "/proc/self/exe"

func init() {
	if len(os.Args) >= 4 && os.Args[1] == noNewPrivsArg {
		os.Exit(noNewPrivsMain(os.Args[2], os.Args[3:]))
	}
}

// noNewPrivsMain sets PR_SET_NO_NEW_PRIVS and execs path with argv and the
// environment it was given; it returns only on failure, with the shell's
// exit code for it.
func noNewPrivsMain(path string, argv []string) int {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "podsup: cannot set no_new_privs for %s: %v\n", path, err)
		return 126
	}
	err := unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "podsup: %s: %v\n", path, err)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return 127
	}
	return 126
}

// noNewPrivsArgv is what the child execs instead of path and args.
func noNewPrivsArgv(path string, args []string) (string, []string) {
	return selfExe, append([]string{"podsup-no-new-privs", noNewPrivsArg, path}, args...)
}

// ErrWouldRunAsRoot is Start's refusal of a Cmd with NotRoot whose user is
// root.
var ErrWouldRunAsRoot = errors.New("would run as root")
