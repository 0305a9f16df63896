package notify

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// dirPrefix starts the name of every notify socket directory a Server
// makes (os.MkdirTemp adds digits).
const dirPrefix = "notify-"

// removeStale removes the notify socket directories that podsups which
// died without cleaning up (SIGKILL, a crash, a power cut on a
// persistent runtime directory) left in dir. Several podsups may share
// dir (one socket each), so a directory is removed only when all of this
// holds: its name is dirPrefix and digits, as a Server names it; it is a
// real directory (opened with O_NOFOLLOW), owned by this podsup's user;
// and nobody holds its flock, which its Server keeps from its start until
// it is gone, and the kernel lets go of when its podsup dies, whatever
// its pid namespace. Its entries (the sockets a Server made) are unlinked
// relative to its fd; a subdirectory, which a Server never makes, keeps
// the directory in place. Failures are only logged: they leave a
// directory behind, nothing worse.
func removeStale(dir string, log zerolog.Logger) {
	pfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	names, err := dirNames(pfd)
	if err != nil {
		return
	}
	euid := os.Geteuid()
	for _, name := range names {
		digits, ok := strings.CutPrefix(name, dirPrefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		if removeIfStale(pfd, name, euid) {
			log.Info().Str("dir", filepath.Join(dir, name)).Msg("removed the notify socket directory of a podsup that is gone")
		}
	}
}

// removeIfStale removes pfd's entry name when it is a stale notify socket
// directory (see removeStale) and reports whether it did.
func removeIfStale(pfd int, name string, euid int) bool {
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // a link, not a directory, or gone
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != euid {
		return false
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // its podsup lives
	}
	entries, err := dirNames(fd)
	if err != nil {
		return false
	}
	for _, e := range entries {
		// Never a directory (EISDIR): unlinkat without AT_REMOVEDIR
		// removes only what a Server makes, and follows no link.
		_ = unix.Unlinkat(fd, e, 0)
	}
	// Remove the name only if it is still the directory checked.
	var now unix.Stat_t
	if unix.Fstatat(pfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return false
	}
	return unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR) == nil
}

// dirNames lists the directory open as fd, without closing fd.
func dirNames(fd int) ([]string, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	return f.Readdirnames(-1)
}
