package logs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Files in log_dir are written by root (podsup's euid) in directories that
// sit next to what supervised processes can reach, so every path below
// log_dir is resolved here, relative to a directory fd, never following a
// symbolic link: a process that could put a link where a log file goes
// would otherwise have root append to (or truncate, or rename) any file it
// names. log_dir itself is the configuration author's path (links in it
// are followed, as in any path root's configuration names) but the
// directory it leads to must be owned by podsup's euid or root and not be
// writable by others; the group directories under it are made by podsup
// (mkdirat, 0750) and must pass the same check. As logrotate refuses a
// log file whose parent directory is insecure, podsup refuses to write
// anything in such a directory, saying why and how to fix it.

// ErrInsecureLogDir is wrapped by the errors for a log_dir, or a
// directory under it, that someone other than podsup's user or root could
// change, or a link where a directory or file of podsup's goes.
var ErrInsecureLogDir = errors.New("insecure log directory")

// noOpenat2 is set once openat2 turned out to be missing (Linux < 5.6, or
// a seccomp filter that refuses it): from then on every open is openat
// with O_NOFOLLOW on its single component. Tests set it to check the
// fallback.
var noOpenat2 atomic.Bool

// checkName refuses a name that is not exactly one path component: a
// group or process name becomes one directory or file name in log_dir,
// never a path.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("log file name %q is not a file name", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("log file name %q contains a slash or NUL; a group or process name is one file name in log_dir", name)
	case len(name) > 255-len(".log.")-5: // NAME_MAX, keeping room for ".log.NNNNN"
		return fmt.Errorf("log file name %q is longer than a file name may be", name)
	}
	return nil
}

// openBeneath opens name, one component, relative to dirfd, failing with
// ELOOP where a symbolic link is: openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS, or, where openat2 is missing, openat with
// O_NOFOLLOW (the same for one component).
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY
	if !noOpenat2.Load() {
		how := unix.OpenHow{
			Flags:   uint64(flags),
			Mode:    uint64(mode),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for tries := 0; ; tries++ {
			fd, err := unix.Openat2(dirfd, name, &how)
			if (err == unix.EINTR || err == unix.EAGAIN) && tries < 100 {
				continue // EAGAIN: a rename raced the lookup; the kernel asks for a retry
			}
			if err == unix.ENOSYS {
				// Linux < 5.6, or a seccomp profile that answers
				// ENOSYS: openat with O_NOFOLLOW is as strict for one
				// component.
				noOpenat2.Store(true)
				break
			}
			if err == unix.EPERM {
				break // a seccomp profile that answers EPERM; openat says whether it was the file
			}
			return fd, err
		}
	}
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// checkDir refuses the directory open at fd unless it is owned by podsup's
// euid or root and writable by nobody else (group write is allowed for
// group root, as logrotate allows it). what names it in messages.
func checkDir(fd int, what, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("checking %s %s: %w", what, path, err)
	}
	euid := uint32(os.Geteuid())
	mode := st.Mode & 0o7777
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%w: %s %s is not a directory", ErrInsecureLogDir, what, path)
	case st.Uid != euid && st.Uid != 0:
		return fmt.Errorf("%w: %s %s is owned by uid %d, not by podsup's user (uid %d) or root, so its owner could swap podsup's log files for links; chown %d %s",
			ErrInsecureLogDir, what, path, st.Uid, euid, euid, path)
	case mode&0o002 != 0, mode&0o020 != 0 && st.Gid != 0:
		return fmt.Errorf("%w: %s %s (mode %04o) is writable by group or others, so they could swap podsup's log files for links; chmod go-w %s",
			ErrInsecureLogDir, what, path, mode, path)
	}
	return nil
}

// explain says what an open without links ran into: ELOOP (or ENOTDIR
// for a directory) where a link is named as such.
func explain(err error, dirfd int, name, path, what string) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return fmt.Errorf("%w: %s is a symbolic link; podsup never follows links under log_dir: remove it", ErrInsecureLogDir, path)
		}
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// openLogDir opens log_dir and checks it; with create it is made (0750,
// parents too) when missing.
func openLogDir(dir string, create bool) (int, error) {
	open := func() (int, error) {
		for {
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == unix.EINTR {
				continue
			}
			return fd, err
		}
	}
	fd, err := open()
	if err == unix.ENOENT && create {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return -1, fmt.Errorf("creating log_dir: %w", err)
		}
		fd, err = open()
	}
	if err != nil {
		return -1, fmt.Errorf("opening log_dir %s: %w", dir, err)
	}
	if err := checkDir(fd, "log_dir", dir); err != nil {
		_ = unix.Close(fd) // refused; nothing was written through it
		return -1, err
	}
	return fd, nil
}

// openGroupDir opens log_dir/group, checked, without following a link in
// it; with create, it (and log_dir) is made when missing.
func openGroupDir(dir, group string, create bool) (int, error) {
	if err := checkName(group); err != nil {
		return -1, err
	}
	root, err := openLogDir(dir, create)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root) // only the group directory's fd is kept
	path := dir + "/" + group
	if create {
		// Made by podsup's euid and not writable by processes, so nobody
		// but root can put a link in it afterwards.
		if err := unix.Mkdirat(root, group, 0o750); err != nil && err != unix.EEXIST {
			return -1, fmt.Errorf("creating log directory %s: %w", path, err)
		}
	}
	fd, err := openBeneath(root, group, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, explain(err, root, group, path, "opening log directory")
	}
	if err := checkDir(fd, "log directory", path); err != nil {
		_ = unix.Close(fd) // refused
		return -1, err
	}
	return fd, nil
}

// checkLogDir is what NewHub asks of log_dir: it exists (made if missing)
// and nobody but podsup's user or root can change it. Only an insecure
// log_dir is an error; one that cannot be made or opened yet (a mount to
// come) is left to the first write to report.
func checkLogDir(dir string) (warn, err error) {
	fd, err := openLogDir(dir, true)
	if err != nil {
		if errors.Is(err, ErrInsecureLogDir) {
			return nil, err
		}
		return err, nil
	}
	_ = unix.Close(fd) // opened to be checked
	return nil, nil
}

// regularFile refuses an fd that is not a regular file of one name (a
// FIFO or device where a log file goes, or a hard link to another file:
// one planted while the directory was still writable by others outlives
// a chmod of the directory), and returns its stat (the size is the
// caller's).
func regularFile(fd int, path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, fmt.Errorf("checking log file %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return st, fmt.Errorf("%w: %s is not a regular file; remove it", ErrInsecureLogDir, path)
	}
	if st.Nlink > 1 {
		return st, fmt.Errorf("%w: %s has %d hard links, so it may be another file too; podsup writes only a file of its own: remove it", ErrInsecureLogDir, path, st.Nlink)
	}
	return st, nil
}
