package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// setupMounts runs in the holder, in the sandbox's new mount namespace.
// First every mount becomes private, so nothing done here propagates to
// the host (on systemd hosts "/" is shared). With a rootfs, the mounts are
// made under it (bind sources are host paths, reachable only before the
// pivot) and then the holder pivot_roots into it and detaches the old root.
func setupMounts(rootfs string, mounts []spec.Mount) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	root := "/"
	if rootfs != "" {
		// pivot_root wants the new root to be a mount point.
		if err := unix.Mount(rootfs, rootfs, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting rootfs %s: %w", rootfs, err)
		}
		root = rootfs
	}
	for _, m := range mounts {
		if err := mountOne(m, filepath.Join(root, m.Target)); err != nil {
			return err
		}
	}
	if rootfs != "" {
		return pivotRoot(rootfs)
	}
	return nil
}

func mountOne(m spec.Mount, target string) error {
	var flags uintptr
	if m.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	switch m.Type {
	case "proc":
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("creating mount point %s: %w", target, err)
		}
		if err := unix.Mount("proc", target, "proc", flags|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, m.Options); err != nil {
			return fmt.Errorf("mounting proc on %s: %w", target, err)
		}
	case "tmpfs":
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("creating mount point %s: %w", target, err)
		}
		if err := unix.Mount("tmpfs", target, "tmpfs", flags|unix.MS_NOSUID|unix.MS_NODEV, m.Options); err != nil {
			return fmt.Errorf("mounting tmpfs on %s: %w", target, err)
		}
	case "bind":
		st, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("bind mount source: %w", err)
		}
		if err := makeMountPoint(target, st.IsDir()); err != nil {
			return err
		}
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s on %s: %w", m.Source, target, err)
		}
		if m.ReadOnly {
			// A bind mount takes MS_RDONLY only on a remount.
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("making bind mount %s read-only: %w", target, err)
			}
		}
	default:
		return fmt.Errorf("mount type %q is not one of proc, tmpfs, bind", m.Type)
	}
	return nil
}

// makeMountPoint creates target as a directory, or as an empty file to
// bind a file onto.
func makeMountPoint(target string, dir bool) error {
	if dir {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("creating mount point %s: %w", target, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("creating mount point %s: %w", target, err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("creating mount point %s: %w", target, err)
	}
	return f.Close()
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
