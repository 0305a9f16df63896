package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// setupMounts runs in the holder, in the sandbox's new mount namespace.
// First every mount becomes private, so nothing done here propagates to
// the host (on systemd hosts "/" is shared). With a rootfs, the mounts are
// made under it (bind sources are host paths, reachable only before the
// pivot) and then the holder pivot_roots into it and detaches the old one.
// The masked and read-only paths of runc's default profile are applied
// after the mounts (so that the sandbox's /proc is the one masked), and
// the root becomes read-only last.
//
// Mount targets are paths inside the sandbox: each is resolved inside the
// rootfs (inRoot), so a symlink of the rootfs, absolute or climbing with
// "..", means what it will mean once the sandbox runs there, and a mount
// point is never created, nor a mount made, outside the rootfs. Bind
// sources are podsup's configuration and are resolved on the host.
func setupMounts(cfg holderConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	root := "/"
	if cfg.Rootfs != "" {
		// pivot_root wants the new root to be a mount point.
		if err := unix.Mount(cfg.Rootfs, cfg.Rootfs, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting rootfs %s: %w", cfg.Rootfs, err)
		}
		root = cfg.Rootfs
	}
	// Opened after the self-bind, so that it is the rootfs mount's root.
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening root %s: %w", root, err)
	}
	defer unix.Close(rootFD)
	r := inRoot{fd: rootFD, path: root}
	// A bind's source is the host's: one under /tmp must not be looked
	// for in the private /tmp about to hide it. Each is opened now and
	// bound from its fd; so is a volume's (NoSymlinks), which must be
	// opened through no symlink.
	mounts, err := openBindSources(cfg.Mounts, cfg.PrivateTmp)
	if err != nil {
		return err
	}
	defer closeBindSources(mounts)
	if cfg.PrivateTmp {
		// First, so that a mount of the configuration on /tmp wins.
		mounts = append(privateTmpMounts(), mounts...)
	}
	var writable []string // targets of the sandbox's own writable mounts
	for _, m := range mounts {
		if err := mountOne(r, m); err != nil {
			return err
		}
		if !m.ReadOnly {
			writable = append(writable, m.Target)
		}
	}
	if cfg.MaskProc {
		// Before the pivot, while the host's /dev/null is in reach. The
		// read-only root below never touches them: it leaves /proc and
		// /sys alone, or (in a rootfs) changes the root mount only.
		if err := maskPaths(r); err != nil {
			return fmt.Errorf("proc_mount Default: %w", err)
		}
	}
	if cfg.Rootfs != "" {
		if err := pivotRoot(cfg.Rootfs); err != nil {
			return err
		}
	}
	if cfg.ReadOnlyRoot {
		if err := readOnlyRoot(cfg.Rootfs != "", writable); err != nil {
			return fmt.Errorf("read_only_root_filesystem: %w", err)
		}
	}
	return nil
}

// mountOne makes m on its target, resolved inside root. The mount goes
// onto the resolved file through /proc/self/fd/N (runc's way), never
// through the path again, so what was resolved is what is mounted on.
// openBindSources returns mounts with each bind's Source replaced by an
// O_PATH fd of it (/proc/self/fd/N), opened in the view before any of the
// sandbox's mounts is made.
func openBindSources(mounts []spec.Mount, all bool) ([]spec.Mount, error) {
	out := append([]spec.Mount(nil), mounts...)
	for i, m := range out {
		if m.Type != "bind" || !all && !m.NoSymlinks {
			continue
		}
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if m.NoSymlinks {
			fd, err = unix.Openat2(unix.AT_FDCWD, m.Source, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		}
		if err != nil {
			closeBindSources(out[:i])
			return nil, fmt.Errorf("bind mount source: %s: %w", m.Source, err)
		}
		out[i].Source = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	return out, nil
}

// closeBindSources closes the fds openBindSources opened.
func closeBindSources(mounts []spec.Mount) {
	for _, m := range mounts {
		var fd int
		if m.Type == "bind" {
			if _, err := fmt.Sscanf(m.Source, "/proc/self/fd/%d", &fd); err == nil {
				_ = unix.Close(fd) // O_PATH: nothing to flush
			}
		}
	}
}

func mountOne(root inRoot, m spec.Mount) error {
	var flags uintptr
	if m.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	switch m.Type {
	case "proc":
		return root.mountOn(m.Target, true, func(target string) error {
			return unix.Mount("proc", target, "proc", flags|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, m.Options)
		})
	case "tmpfs":
		return root.mountOn(m.Target, true, func(target string) error {
			return unix.Mount("tmpfs", target, "tmpfs", flags|unix.MS_NOSUID|unix.MS_NODEV, m.Options)
		})
	case "bind":
		st, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("bind mount source: %w", err)
		}
		err = root.mountOn(m.Target, st.IsDir(), func(target string) error {
			return unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, "")
		})
		if err != nil || !m.ReadOnly {
			return err
		}
		// A bind mount takes MS_RDONLY only afterwards, on the new mount:
		// open the target again, now on top of the bind.
		fd, err := root.open(m.Target, 0)
		if err != nil {
			return fmt.Errorf("making bind mount %s read-only: %w", m.Target, err)
		}
		defer unix.Close(fd)
		if err := makeReadOnly(fd); err != nil {
			return fmt.Errorf("making bind mount %s read-only: %w", m.Target, err)
		}
		return nil
	default:
		return fmt.Errorf("mount type %q is not one of proc, tmpfs, bind", m.Type)
	}
}

// makeReadOnly makes the mount whose root fd is open read-only, and every
// mount below it: a recursive bind brings the source's submounts along,
// and they must not stay writable. mount_setattr (Linux 5.12) does it in
// one call; before it, a remount reaches only the top mount.
func makeReadOnly(fd int) error {
	err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err != unix.ENOSYS {
		return err
	}
	return unix.Mount("", procFDPath(fd), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
}

func procFDPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// inRoot resolves paths inside a directory as if it were "/".
type inRoot struct {
	fd   int    // O_PATH fd of the directory
	path string // its host path, for messages
}

// mountOn creates the mount point target inside the root if it is missing
// (a directory, or an empty file when dir is false, with any missing
// parents) and calls mount with a path that names the resolved file.
func (r inRoot) mountOn(target string, dir bool, mount func(target string) error) error {
	fd, err := r.mountPoint(target, dir)
	if err != nil {
		return fmt.Errorf("creating mount point %s in %s: %w", target, r.path, err)
	}
	defer unix.Close(fd)
	if err := mount(procFDPath(fd)); err != nil {
		return fmt.Errorf("mounting on %s in %s: %w", target, r.path, err)
	}
	return nil
}

// mountPoint opens target, creating what is missing of it.
func (r inRoot) mountPoint(target string, dir bool) (int, error) {
	for range maxSymlinks {
		fd, through, err := r.mountPointOnce(target, dir)
		if through == "" {
			return fd, err
		}
		target = through
	}
	return -1, unix.ELOOP
}

// maxSymlinks is the kernel's limit on symlinks in one lookup.
const maxSymlinks = 40

// mountPointOnce opens target, creating its missing components one by
// one, each in a parent directory resolved inside the root. When a
// component to create is a dangling symlink it returns, as through, the
// target with that symlink replaced by what it points to: creating that
// path instead (inside the root, like any other) is what following the
// symlink means there.
func (r inRoot) mountPointOnce(target string, dir bool) (fd int, through string, err error) {
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+target), "/"), "/")
	if parts[0] == "" { // target is the root itself
		fd, err := r.open(".", 0)
		return fd, "", err
	}
	for i, name := range parts {
		last := i == len(parts)-1
		sub, parent := path.Join(parts[:i+1]...), path.Join(parts[:i]...)
		fd, err := r.open(sub, 0)
		if err == nil && last {
			return fd, "", nil
		}
		if err == nil {
			unix.Close(fd)
			continue
		}
		if err != unix.ENOENT {
			return -1, "", err
		}
		err = r.create(parent, name, dir || !last)
		if err == unix.EEXIST {
			link, lerr := r.readlink(parent, name)
			if lerr != nil {
				return -1, "", err // it exists after all: created meanwhile, or not a symlink
			}
			if !path.IsAbs(link) {
				link = path.Join("/", parent, link)
			}
			return -1, path.Join(append([]string{link}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return -1, "", err
		}
		if last {
			fd, err := r.open(sub, 0)
			return fd, "", err
		}
	}
	panic("unreachable: the last component returns")
}

// create makes name, a directory or an empty file, in the directory
// parent (resolved inside the root). It never follows name: if name is a
// symlink, it fails with EEXIST.
func (r inRoot) create(parent, name string, dir bool) error {
	pfd, err := r.open(orDot(parent), unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if dir {
		return unix.Mkdirat(pfd, name, 0o755)
	}
	fd, err := unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// readlink reads the symlink name in the directory parent (resolved
// inside the root).
func (r inRoot) readlink(parent, name string) (string, error) {
	pfd, err := r.open(orDot(parent), unix.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer unix.Close(pfd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(pfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// open opens rel (relative to the root; symlinks in it resolved inside
// the root) as an O_PATH fd. openat2 with RESOLVE_IN_ROOT (Linux 5.6) does
// that in the kernel; without it, openNoSymlinks refuses every symlink.
func (r inRoot) open(rel string, flags int) (int, error) {
	fd, err := unix.Openat2(r.fd, rel, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_PATH | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	for err == unix.EAGAIN { // a rename or mount raced the lookup
		fd, err = unix.Openat2(r.fd, rel, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_PATH | unix.O_CLOEXEC),
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
	}
	if err == unix.ENOSYS {
		return r.openNoSymlinks(rel, flags)
	}
	return fd, err
}

// errSymlinkInTarget: this kernel cannot resolve a symlink inside a root.
var errSymlinkInTarget = errors.New("the path goes through a symlink, which only Linux 5.6+ (openat2) can resolve inside a rootfs")

// openNoSymlinks walks rel one component at a time without following
// symlinks, for kernels without openat2.
func (r inRoot) openNoSymlinks(rel string, flags int) (int, error) {
	fd, err := unix.Openat(r.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(path.Clean(rel), "/") {
		if name == "." || name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, errSymlinkInTarget
		}
	}
	if flags&unix.O_DIRECTORY != 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			return -1, unix.ENOTDIR
		}
	}
	return fd, nil
}

// pivotRoot makes rootfs the root and detaches the old one, runc's way:
// pivot_root(".", ".") stacks the old root on top of the new one, and
// unmounting "." (the old root, entered through its fd) uncovers the new.
// pivot_root, unlike chroot, leaves no way back to the host's files.
func pivotRoot(rootfs string) error {
	oldRoot, err := unix.Open("/", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening old root: %w", err)
	}
	defer unix.Close(oldRoot)
	newRoot, err := unix.Open(rootfs, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening rootfs %s: %w", rootfs, err)
	}
	defer unix.Close(newRoot)
	if err := unix.Fchdir(newRoot); err != nil {
		return fmt.Errorf("entering rootfs: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into %s: %w", rootfs, err)
	}
	if err := unix.Fchdir(oldRoot); err != nil {
		return fmt.Errorf("entering old root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("entering new root: %w", err)
	}
	return nil
}

// loopbackUp sets IFF_UP on "lo" in the new network namespace (which
// starts with lo down), with the SIOCSIFFLAGS ioctl: no `ip` binary.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing lo up: opening socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: reading flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}
