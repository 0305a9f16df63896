package notify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// ListenPIDCommand is the hidden first argument that makes podsup the
// socket-activation shim: `podsup __listenpid PROGRAM ARGS...`.
const ListenPIDCommand = "__listenpid"

// ListenPIDMain sets LISTEN_PID to its own pid and execs args[0] (looked up
// in PATH) with args, so the program, which keeps the pid, finds
// LISTEN_PID equal to getpid() as sd_listen_fds(3) requires. Go's fork
// cannot set a variable between fork and exec; this extra exec can.
// Call it from main before anything else runs. It returns only to exit:
// 127 when the program does not exist, 126 when it cannot be executed, 2
// without a program.
func ListenPIDMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "podsup "+ListenPIDCommand+": no program to run")
		return 2
	}
	_ = os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid())) // cannot fail on unix
	path, err := exec.LookPath(args[0])
	if err == nil {
		err = syscall.Exec(path, args, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "podsup %s: %s: %v\n", ListenPIDCommand, args[0], err)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		return 127
	}
	return 126
}
