package proc

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// forkFDError tells fd exhaustion from a bad fd in a fork's EBADF.
//
// Before it execs, the child of syscall.ForkExec moves its error pipe (and
// any fd its dups onto 0, 1, 2... would overwrite) to the numbers just
// above the highest fd it was given. Those numbers must be below
// RLIMIT_NOFILE, and dup3 fails there with EBADF, not EMFILE: when
// podsup's fds filled its limit, the start whose stdout pipe got the last
// number failed with "bad file descriptor" while the others failed with
// "too many open files". No fd was closed twice (every fd in files is
// open: the caller holds it); the child ran out of numbers. So an EBADF
// with every file open and the numbers the child needs at or above the
// limit is reported as what it is, EMFILE.
func forkFDError(err error, files []uintptr) error {
	if err != syscall.EBADF {
		return err
	}
	next := uintptr(len(files))
	for _, fd := range files {
		if fd == ^uintptr(0) {
			return err // a closed *os.File was passed: a real EBADF
		}
		if _, ferr := unix.FcntlInt(fd, unix.F_GETFD, 0); ferr != nil {
			return err // a closed fd was passed
		}
		next = max(next, fd)
	}
	next++ // the first number the child dups to
	var lim unix.Rlimit
	// The child may need one number per file besides its error pipe.
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || uint64(next)+uint64(len(files)) < lim.Cur {
		return err
	}
	return fmt.Errorf("%w (the new process needs fd %d, and podsup's RLIMIT_NOFILE is %d)", syscall.EMFILE, next, lim.Cur)
}

var devNull struct {
	mu sync.Mutex
	f  *os.File
}

// sharedDevNull is the /dev/null given to every process as the stdio it
// was not given otherwise: opened when the reaper is installed, before
// any start, and kept. A failed open is not kept. A sync.Once kept it:
// when podsup's fds were full at its first start, every later start
// failed with "open /dev/null: too many open files" for the rest of
// podsup's life, however many fds had been freed (40 processes under a
// limit of 64 then started none at all).
//
// Nor is one kept at a number in the upper half of RLIMIT_NOFILE. The
// child of a fork dups onto numbers above the highest fd it is given
// (forkFDError), so a /dev/null kept at the last number failed every
// later start, fds free or not: opened on first use while a burst of
// starts held every lower number, it got 63 of 64, and 60 processes
// under that limit then started none (a 1-in-10 flake of
// TestUpOutOfFDsStartsWhatFitsEveryTime). Refused there, the start fails
// as what it is, out of fds, and a later one opens it lower.
func sharedDevNull() (*os.File, error) {
	devNull.mu.Lock()
	defer devNull.mu.Unlock()
	if devNull.f == nil {
		f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		var lim unix.Rlimit
		if fd := f.Fd(); unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && uint64(fd) >= lim.Cur/2 {
			_ = f.Close()
			return nil, fmt.Errorf("open %s: %w (it would be fd %d, and every process given it would need fds above podsup's RLIMIT_NOFILE of %d)",
				os.DevNull, syscall.EMFILE, fd, lim.Cur)
		}
		devNull.f = f
	}
	return devNull.f, nil
}
