package pid1

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// The Go runtime preempts goroutines by sending SIGURG to its own threads
// (asynchronous preemption), and it unblocks SIGURG on every thread it
// starts. A SIGURG from outside that lands on a thread other than the
// signal thread is then taken for a preemption request and lost; os/signal
// cannot catch it either, since there it could not be told from the
// runtime's own. GODEBUG=asyncpreemptoff=1 ends both problems: the runtime
// then never sends SIGURG, so every SIGURG os/signal catches came from
// outside and is forwarded. The runtime reads the setting once, at start,
// which is why Prepare re-executes the program.
//
// Goroutines are then preempted only at function calls, as before Go 1.14:
// a supervisor of one child has no long loops without calls to stall on.

// preparedEnv marks a program Prepare re-executed. Its value is the
// GODEBUG the program was started with ("=VALUE", or "" when unset), put
// back at once so that the child gets the environment podsup was given.
const preparedEnv = "PODSUP_PID1_GODEBUG"

// runtimeSendsSIGURG is whether asynchronous preemption is on: the
// GODEBUG this program started with decides, as it did for the runtime.
var runtimeSendsSIGURG = !asyncPreemptOff(os.Getenv("GODEBUG"))

// asyncPreemptOff reads asyncpreemptoff from a GODEBUG value the way the
// runtime does at start: left to right, the last setting wins, any
// non-zero number turns preemption off.
func asyncPreemptOff(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(kv, "asyncpreemptoff="); ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				off = n != 0
			}
		}
	}
	return off
}

// Prepare makes this program able to forward every SIGURG sent to it from
// outside, however busy it is. Call it first in a program that will call
// Run, before it starts goroutines of its own: unless asynchronous
// preemption is already off (GODEBUG=asyncpreemptoff=1), it re-executes the
// program (/proc/self/exe, same arguments) with it off, and so does not
// return. In the re-executed program it puts GODEBUG back as it was and
// returns nil. On an error (no /proc, an exec failure) the program goes on
// as it is, and Run forwards a SIGURG only when it reaches the signal
// thread.
//
// Signals keep their state across the exec: the calling thread's mask,
// and signals already pending stay pending.
func Prepare() error {
	if v, ok := os.LookupEnv(preparedEnv); ok {
		_ = os.Unsetenv(preparedEnv)
		if orig, set := strings.CutPrefix(v, "="); set {
			_ = os.Setenv("GODEBUG", orig)
		} else {
			_ = os.Unsetenv("GODEBUG")
		}
		return nil
	}
	if !runtimeSendsSIGURG {
		return nil
	}
	env := preparedEnviron(os.Environ())
	// The mask is per thread and survives exec: exec from the locked one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := syscall.Exec("/proc/self/exe", os.Args, env)
	return fmt.Errorf("re-executing with asynchronous preemption off: %w", err)
}

// preparedEnviron is env with asyncpreemptoff=1 added to GODEBUG (last, so
// it wins) and the original GODEBUG recorded in preparedEnv.
func preparedEnviron(env []string) []string {
	out := make([]string, 0, len(env)+2)
	orig, set := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			orig, set = v, true
			continue
		}
		out = append(out, kv)
	}
	godebug, mark := "asyncpreemptoff=1", ""
	if set {
		mark = "=" + orig
		if orig != "" {
			godebug = orig + "," + godebug
		}
	}
	return append(out, "GODEBUG="+godebug, preparedEnv+"="+mark)
}
