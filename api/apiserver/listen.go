package apiserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrAlreadyRunning is returned by Listen when another process answers on
// the socket.
var ErrAlreadyRunning = errors.New("another podsup is already listening on this socket")

// Listener is the control socket Listen bound. Besides serving, it knows
// the inode it made, so that RemoveSocket deletes that socket and nothing
// another process put at the path since.
type Listener struct {
	*net.UnixListener
	path     string
	name     string // the socket's name in its directory
	dirfd    int    // the socket's directory, opened and checked by Listen
	dev, ino uint64
	once     sync.Once
}

// Path is the socket's path, as Listen was given it.
func (l *Listener) Path() string { return l.path }

// RemoveSocket deletes the socket from its directory if the name still
// holds the inode Listen bound (a socket moved away and replaced by
// another file is left alone), and closes the directory. It does not close
// the listener. Only the first call does anything.
func (l *Listener) RemoveSocket() error {
	var err error
	l.once.Do(func() {
		defer unix.Close(l.dirfd)
		var st unix.Stat_t
		if err = unix.Fstatat(l.dirfd, l.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				err = nil
			}
			return
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK || uint64(st.Dev) != l.dev || st.Ino != l.ino {
			return // not ours any more
		}
		// Between the stat and the unlink only the directory's owner
		// (podsup's user or root, as Listen checked) can swap the name.
		err = unix.Unlinkat(l.dirfd, l.name, 0)
	})
	return err
}

// Listen creates the control socket at path, mode 0600, or 0660 and group
// gid when gid >= 0, and listens on it.
//
// The socket's directory is created if missing: 0755 for root (processes
// running as other users reach their notify sockets beside the control
// socket, and socket_group members must traverse it; nobody but root can
// write it), 0711 for another user with a socket group (its members
// traverse it, nobody lists it), 0700 otherwise. An existing directory is
// refused when it is a symbolic link, is not owned by podsup's user or
// root, or is writable by group or others: whoever can write the
// directory can replace the socket, and a client would then talk to them
// (ssh-agent, tmux and systemd refuse such directories too). The
// directory is checked through an fd opened with O_NOFOLLOW, and every
// later step works relative to that fd, never by path.
//
// The socket is bound in a fresh private subdirectory (0700), given its
// group and mode there, where nobody else can reach it, and only then
// renamed into place (the same inode, atomically, never over an existing
// file): no chown or chmod ever acts on a name someone else could have
// swapped for a symbolic link, and no process umask is touched.
//
// Only a stale socket at path (nobody answering) is replaced; a live one
// fails with ErrAlreadyRunning, and any other kind of file (regular file,
// directory, symbolic link, FIFO, device) is refused and left alone.
func Listen(path string, gid int) (*Listener, error) {
	if max := len(unix.RawSockaddrUnix{}.Path) - 1; len(path) > max {
		return nil, fmt.Errorf("socket path %s is %d bytes, longer than a unix socket path may be (%d): choose a shorter --socket", path, len(path), max)
	}
	dir, name := filepath.Dir(path), filepath.Base(path)
	if name == "." || name == "/" || name == ".." {
		return nil, fmt.Errorf("socket path %q names no file", path)
	}
	dirfd, err := openSocketDir(dir, gid)
	if err != nil {
		return nil, err
	}
	if err := removeStale(dirfd, dir, name, path); err != nil {
		unix.Close(dirfd)
		return nil, err
	}
	mode := uint32(0o600)
	if gid >= 0 {
		mode = 0o660
	}
	l, dev, ino, err := bindInto(dirfd, dir, name, path, mode, gid)
	if err != nil {
		unix.Close(dirfd)
		return nil, err
	}
	return &Listener{UnixListener: l, path: path, name: name, dirfd: dirfd, dev: dev, ino: ino}, nil
}

// socketDirMode is the mode of a socket directory Listen creates.
func socketDirMode(gid int) uint32 {
	switch {
	case os.Geteuid() == 0:
		return 0o755
	case gid >= 0:
		return 0o711
	}
	return 0o700
}

// openSocketDir opens (creating it if missing) and checks the socket's
// directory; see Listen.
func openSocketDir(dir string, gid int) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open(dir, flags, 0)
	created := false
	if err == unix.ENOENT {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return -1, fmt.Errorf("unable to create the socket's directory: %w", err)
		}
		switch err := unix.Mkdir(dir, 0o700); err {
		case nil:
			created = true
		case unix.EEXIST: // made meanwhile: checked below like any other
		default:
			return -1, fmt.Errorf("unable to create the socket's directory %s: %w", dir, err)
		}
		fd, err = unix.Open(dir, flags, 0)
	}
	if err == unix.ENOTDIR { // O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR too
		var lst unix.Stat_t
		if unix.Lstat(dir, &lst) == nil && lst.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
	}
	switch err {
	case nil:
	case unix.ELOOP:
		return -1, fmt.Errorf("the socket's directory %s is a symbolic link: podsup keeps its socket only in a real directory, which whoever made the link cannot swap; remove the link or choose another --socket", dir)
	case unix.ENOTDIR:
		return -1, fmt.Errorf("the socket's directory %s is not a directory: choose another --socket", dir)
	default:
		return -1, fmt.Errorf("unable to open the socket's directory %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("unable to check the socket's directory %s: %w", dir, err)
	}
	euid := os.Geteuid()
	if int(st.Uid) != euid && st.Uid != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("the socket's directory %s belongs to uid %d, not to you (uid %d) or root: its owner could replace the socket and answer in podsup's place; remove the directory (podsup makes its own) or choose another --socket", dir, st.Uid, euid)
	}
	if created && int(st.Uid) == euid {
		// Mkdir's mode went through the umask: set the one meant.
		if err := unix.Fchmod(fd, socketDirMode(gid)); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("unable to set the mode of the socket's directory %s: %w", dir, err)
		}
		st.Mode = st.Mode&^0o7777 | socketDirMode(gid)
	}
	if st.Mode&0o022 != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("the socket's directory %s is writable by others (mode %04o): anyone who can write it could replace the socket and answer in podsup's place; run chmod go-w %s, or choose another --socket", dir, st.Mode&0o7777, dir)
	}
	return fd, nil
}

// removeStale makes the way clear for the socket: nothing there, or a
// socket nobody answers on (removed). A live socket is ErrAlreadyRunning;
// any other file is refused.
func removeStale(dirfd int, dir, name, path string) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err {
	case nil:
	case unix.ENOENT:
		return nil
	default:
		return fmt.Errorf("unable to look at %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("%s: %s is there, not a stale socket; podsup removes only sockets: move it away or choose another --socket", path, fileKind(st.Mode))
	}
	c, err := net.DialTimeout("unix", at(dirfd, dir, name), time.Second)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("%s: %w", path, ErrAlreadyRunning)
	case errors.Is(err, unix.EAGAIN):
		// Its listen queue is full: someone is there, overloaded.
		return fmt.Errorf("%s: %w (its connection queue is full)", path, ErrAlreadyRunning)
	case errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.ENOENT):
	default:
		return fmt.Errorf("unable to tell whether the socket %s is stale: %w", path, err)
	}
	// A stale socket: nobody listens on it. Remove it only if it is still
	// the file just looked at.
	var again unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &again, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return fmt.Errorf("unable to look at %s: %w", path, err)
	}
	if again.Dev != st.Dev || again.Ino != st.Ino {
		return fmt.Errorf("%s changed while podsup looked at it: is another podsup starting on it?", path)
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("unable to remove the stale socket %s: %w", path, err)
	}
	return nil
}

// fileKind names what a file of this mode is, for messages.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "a file of unknown type"
}

// at is a path that reaches name in the directory open as dirfd without
// resolving the directory's path again: through /proc/self/fd when it is
// mounted (and the result fits in a socket address), else dir/name.
func at(dirfd int, dir, name string) string {
	p := "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
	if len(p) < len(unix.RawSockaddrUnix{}.Path) {
		var st unix.Stat_t
		if unix.Stat("/proc/self/fd/"+strconv.Itoa(dirfd), &st) == nil {
			return p
		}
	}
	return filepath.Join(dir, name)
}

// bindInto binds and listens on a socket in a fresh private subdirectory
// of dirfd, gives it its group and mode there, and renames it to name;
// see Listen. It returns the socket's device and inode.
func bindInto(dirfd int, dir, name, path string, mode uint32, gid int) (*net.UnixListener, uint64, uint64, error) {
	var sub string
	for try := 0; ; try++ {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		sub = ".podsup-bind-" + hex.EncodeToString(b)
		err := unix.Mkdirat(dirfd, sub, 0o700)
		if err == nil {
			break
		}
		if err != unix.EEXIST || try == 10 {
			return nil, 0, 0, fmt.Errorf("unable to make a private directory in %s to bind the socket in: %w", dir, err)
		}
	}
	defer unix.Unlinkat(dirfd, sub, unix.AT_REMOVEDIR)
	subfd, err := unix.Openat(dirfd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("unable to open the private directory %s: %w", filepath.Join(dir, sub), err)
	}
	defer unix.Close(subfd)
	const tmp = "s"
	defer unix.Unlinkat(subfd, tmp, 0) // left there only on failure
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("unable to make a socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: at(subfd, filepath.Join(dir, sub), tmp)}); err != nil {
		return nil, 0, 0, fmt.Errorf("unable to bind the socket for %s: %w", path, err)
	}
	if err := unix.Listen(fd, 4096); err != nil { // the kernel caps it at somaxconn
		return nil, 0, 0, fmt.Errorf("unable to listen on %s: %w", path, err)
	}
	if gid >= 0 {
		if err := unix.Fchownat(subfd, tmp, -1, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, 0, 0, fmt.Errorf("unable to give the socket to group %d: %w", gid, err)
		}
	}
	// Nothing but podsup's socket is in the private directory: the name
	// cannot be a link.
	if err := unix.Fchmodat(subfd, tmp, mode, 0); err != nil {
		return nil, 0, 0, fmt.Errorf("unable to set the socket's mode: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(subfd, tmp, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, 0, 0, fmt.Errorf("the socket just bound in %s is gone (%v)", filepath.Join(dir, sub), err)
	}
	switch err := unix.Renameat2(subfd, tmp, dirfd, name, unix.RENAME_NOREPLACE); err {
	case nil:
	case unix.EEXIST:
		return nil, 0, 0, fmt.Errorf("%s: %w (it appeared while this one started)", path, ErrAlreadyRunning)
	case unix.EINVAL, unix.ENOSYS:
		// A file system without RENAME_NOREPLACE: look, then rename.
		var there unix.Stat_t
		if unix.Fstatat(dirfd, name, &there, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT {
			return nil, 0, 0, fmt.Errorf("%s: %w (it appeared while this one started)", path, ErrAlreadyRunning)
		}
		if err := unix.Renameat(subfd, tmp, dirfd, name); err != nil {
			return nil, 0, 0, fmt.Errorf("unable to move the socket to %s: %w", path, err)
		}
	default:
		return nil, 0, 0, fmt.Errorf("unable to move the socket to %s: %w", path, err)
	}
	fl, err := net.FileListener(f) // a dup; f's fd is closed on return
	if err != nil {
		_ = unix.Unlinkat(dirfd, name, 0)
		return nil, 0, 0, fmt.Errorf("unable to listen on %s: %w", path, err)
	}
	ul, ok := fl.(*net.UnixListener)
	if !ok {
		fl.Close()
		_ = unix.Unlinkat(dirfd, name, 0)
		return nil, 0, 0, fmt.Errorf("unable to listen on %s: not a unix listener", path)
	}
	// A listener made from an fd never unlinks its address on Close (it
	// would by path, whatever is there then): RemoveSocket does, checking.
	ul.SetUnlinkOnClose(false)
	return ul, uint64(st.Dev), st.Ino, nil
}
