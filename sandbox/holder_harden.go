package sandbox

import (
	"fmt"
	"os"
	"strings"

	"github.com/podsup/podsup/internal/mountinfo"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// The filesystem hardening of a sandbox, run by the holder in its mount
// namespace (setupMounts): a private /tmp, the masked and read-only paths
// of runc's default profile, and a read-only root.

// privateTmpMounts are the mounts of spec.Sandbox.PrivateTmp.
func privateTmpMounts() []spec.Mount {
	return []spec.Mount{
		{Type: "tmpfs", Target: "/tmp", Options: "mode=1777"},
		{Type: "tmpfs", Target: "/var/tmp", Options: "mode=1777"},
	}
}

// maskPaths applies spec.ReadOnlyPaths and spec.MaskedPaths inside root,
// as runc does for a container: a path the sandbox does not have (no /sys
// in a rootfs, a /proc file this kernel lacks) is skipped.
func maskPaths(root inRoot) error {
	for _, p := range spec.ReadOnlyPaths {
		fd, err := root.open(p, 0)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return fmt.Errorf("read-only path %s: %w", p, err)
		}
		err = unix.Mount(procFDPath(fd), procFDPath(fd), "", unix.MS_BIND|unix.MS_REC, "")
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("read-only path %s: %w", p, err)
		}
		// Open it again: on top of the bind now.
		if fd, err = root.open(p, 0); err != nil {
			return fmt.Errorf("read-only path %s: %w", p, err)
		}
		err = makeReadOnly(fd)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("read-only path %s: %w", p, err)
		}
	}
	for _, p := range spec.MaskedPaths {
		if err := maskPath(root, p); err != nil {
			return fmt.Errorf("masked path %s: %w", p, err)
		}
	}
	return nil
}

// maskPath hides p: an empty read-only tmpfs over a directory, the host's
// /dev/null over anything else (reached before any pivot_root, so a
// rootfs needs no /dev of its own).
func maskPath(root inRoot, p string) error {
	fd, err := root.open(p, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.Mount("tmpfs", procFDPath(fd), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555")
	}
	return unix.Mount("/dev/null", procFDPath(fd), "", unix.MS_BIND, "")
}

// readOnlyRoot makes the sandbox's root read-only. In a rootfs (after the
// pivot) that is the root mount alone, runc's readonlyRootfs: the
// sandbox's mounts on it keep their own flags. Without one, the sandbox
// sees the host's tree, and every mount of it becomes read-only (systemd's
// ProtectSystem=strict) but the API filesystems under /dev, /proc and
// /sys, which keep their flags as systemd's do, and the sandbox's own
// writable mounts (at the targets in writable).
func readOnlyRoot(inRootfs bool, writable []string) error {
	if inRootfs {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return setMountReadOnly(fd)
	}
	keep := map[uint64]bool{}
	for _, t := range writable {
		id, err := mountIDOf(t)
		if err != nil {
			return fmt.Errorf("finding the sandbox's mount on %s: %w", t, err)
		}
		keep[id] = true
	}
	points, err := mountPoints()
	if err != nil {
		return err
	}
	for _, mp := range points {
		if keep[mp.id] || underAPIFilesystem(mp.path) {
			continue
		}
		fd, err := unix.Open(mp.path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or not reachable by its path: nothing can use it either
		}
		id, err := fdMountID(fd)
		if err == nil && id == mp.id { // not a mount hidden under another
			err = setMountReadOnly(fd)
			if err != nil {
				err = fmt.Errorf("making %s read-only: %w", mp.path, err)
			}
		} else {
			err = nil
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// underAPIFilesystem: /dev, /proc, /sys and what is mounted below them.
func underAPIFilesystem(p string) bool {
	for _, api := range []string{"/dev", "/proc", "/sys"} {
		if p == api || strings.HasPrefix(p, api+"/") {
			return true
		}
	}
	return false
}

// setMountReadOnly makes the one mount whose root fd is open read-only,
// leaving its other flags and the mounts below it as they are.
func setMountReadOnly(fd int) error {
	err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err != unix.ENOSYS {
		return err
	}
	// A bind remount replaces the mount's flags: carry the others over.
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for st, ms := range map[int64]uintptr{unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV,
		unix.ST_NOEXEC: unix.MS_NOEXEC, unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME,
		unix.ST_RELATIME: unix.MS_RELATIME} {
		if int64(fs.Flags)&st != 0 { // Flags is int32 on 32-bit arches
			flags |= ms
		}
	}
	return unix.Mount("", procFDPath(fd), "", flags, "")
}

func mountIDOf(p string) (uint64, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return fdMountID(fd)
}

// fdMountID is the id of the mount fd is on, as /proc/self/mountinfo
// numbers it (statx STATX_MNT_ID, Linux 5.8).
func fdMountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, fmt.Errorf("this kernel does not report mount ids (Linux 5.8+)")
	}
	return stx.Mnt_id, nil
}

type mountPoint struct {
	id   uint64
	path string
}

// mountPoints lists the mounts of the holder's mount namespace.
func mountPoints() ([]mountPoint, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := mountinfo.Parse(f)
	if err != nil {
		return nil, err
	}
	out := make([]mountPoint, len(all))
	for i, m := range all {
		out[i] = mountPoint{id: m.ID, path: m.MountPoint}
	}
	return out, nil
}
