// Package volume owns a group's volumes on the host (Kubernetes' pod
// volumes, as kubelet keeps them under /var/lib/kubelet/pods): the
// directory of each empty_dir (a tmpfs for medium = "memory"), the
// checks and creation of a host_path, the files of config and secret
// volumes, written as kubelet's AtomicWriter writes them so that a
// running process sees an update whole, and the /etc/hosts and
// /etc/resolv.conf a sandbox with a mount namespace is given. It turns a
// group's volume mounts into the bind mounts package sandbox makes.
//
// A group's volumes live in a directory of their own under the state
// directory, from the group's first sandbox to its release: they survive
// its processes' restarts and a rebuild of its sandbox, as an emptyDir
// survives a container's restarts. What a killed podsup left there is
// removed by the next one of the same instance (RemoveAll).
//
// Paths are treated as hostile where someone else may have written them:
// a sub_path inside an empty_dir the processes write to, a host_path's
// missing directories. Those are resolved with openat2's
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, never through a symlink, and a
// bind mount's source is the fd that was checked (/proc/PID/fd/N), never
// the path again.
package volume

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/mountinfo"
	"github.com/podsup/podsup/spec"
)

// Group is one group's volumes on the host, under Dir.
type Group struct {
	// Dir is the group's own directory: volumes/NAME for each volume,
	// etc/ for its hosts and resolv.conf.
	Dir string
	// tmpfs lists the memory empty_dirs mounted under Dir.
	tmpfs []string
	// fsGID is the group's fs_group, -1 for none (SetFSGroup).
	fsGID int
}

// Open returns the volumes of group under stateDir; nothing is made before
// Prepare.
func Open(stateDir, group string) *Group {
	return &Group{Dir: filepath.Join(stateDir, group), fsGID: -1}
}

// SetFSGroup makes the group's fs_group (a name or a number, "" for none)
// own what Prepare and Update write next, as kubelet's
// SetVolumeOwnership gives a pod's fsGroup its volumes: config and secret
// files get the group and its read bit, empty_dir directories the group,
// its write bit and set-group-ID.
func (g *Group) SetFSGroup(name string) error {
	g.fsGID = -1
	if name == "" {
		return nil
	}
	gid, err := strconv.Atoi(name)
	if err != nil {
		grp, lerr := user.LookupGroup(name)
		if lerr != nil {
			return fmt.Errorf("fs_group %q: %w", name, lerr)
		}
		gid, _ = strconv.Atoi(grp.Gid)
	}
	if gid < 0 {
		return fmt.Errorf("fs_group %q is not a group id", name)
	}
	g.fsGID = gid
	return nil
}

func (g *Group) volumeDir(name string) string { return filepath.Join(g.Dir, "volumes", name) }

// Prepare makes what vols need on the host: each empty_dir once (an
// existing one keeps its files), the config and secret files (rewritten
// when they changed). host_paths are checked when they are mounted
// (Mounts), as kubelet checks them at each pod start.
func (g *Group) Prepare(vols []spec.Volume) error {
	if err := os.MkdirAll(filepath.Join(g.Dir, "volumes"), 0o700); err != nil {
		return fmt.Errorf("making the group's volume directory: %w", err)
	}
	for _, v := range vols {
		dir := g.volumeDir(v.Name)
		switch v.Type {
		case spec.VolumeEmptyDir:
			if err := g.emptyDir(dir, v); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case spec.VolumeConfig, spec.VolumeSecret:
			if _, err := writeFiles(dir, v, g.fsGID); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		}
	}
	return nil
}

// Update rewrites the files of vols' config and secret volumes that
// exist on the host (a reload); a running process sees each volume's
// new files at once, never half of them. It returns the names of the
// volumes whose files changed.
func (g *Group) Update(vols []spec.Volume) (changed []string, err error) {
	var errs []error
	for _, v := range vols {
		if v.Type != spec.VolumeConfig && v.Type != spec.VolumeSecret {
			continue
		}
		dir := g.volumeDir(v.Name)
		if _, err := os.Lstat(dir); err != nil {
			continue // not made yet: Prepare writes it
		}
		ch, err := writeFiles(dir, v, g.fsGID)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
		}
		if ch {
			changed = append(changed, v.Name)
		}
	}
	return changed, errors.Join(errs...)
}

// emptyDir makes an empty_dir's directory, mode 0777 as kubelet's, and a
// memory one's tmpfs, unless they are there from an earlier sandbox of
// the group.
func (g *Group) emptyDir(dir string, v spec.Volume) error {
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if v.Medium == "memory" && !slices.Contains(g.tmpfs, dir) {
		opts := "mode=0777"
		if v.SizeLimit > 0 {
			opts += ",size=" + strconv.FormatInt(v.SizeLimit, 10)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
		}
		g.tmpfs = append(g.tmpfs, dir)
	}
	mode := os.FileMode(0o777) // the umask took bits off
	if g.fsGID >= 0 {
		if err := os.Lchown(dir, -1, g.fsGID); err != nil {
			return err
		}
		mode |= os.ModeSetgid // what the processes make there is the group's too
	}
	return os.Chmod(dir, mode)
}

// Remove unmounts and deletes the group's volumes: the group is gone.
func (g *Group) Remove() error {
	for _, dir := range g.tmpfs {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
	}
	g.tmpfs = nil
	return removeAll(g.Dir)
}

// RemoveAll deletes what an earlier podsup of the instance left under
// stateDir: its mounts first (deepest first), then the files.
func RemoveAll(stateDir string) error {
	if _, err := os.Lstat(stateDir); err != nil {
		// Missing, or out of reach of a podsup that is not root (whose
		// groups cannot have made volumes there): nothing to remove.
		return nil
	}
	if err := unmountUnder(stateDir); err != nil {
		return err
	}
	return removeAll(stateDir)
}

func unmountUnder(dir string) error {
	mounts, err := selfMounts()
	if err != nil {
		return err
	}
	var under []string
	for _, m := range mounts {
		if strings.HasPrefix(m.MountPoint, dir+"/") {
			under = append(under, m.MountPoint)
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	for _, mp := range under {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("unmounting %s: %w", mp, err)
		}
	}
	return nil
}

// removeAll deletes dir; a mount left under it would have its files
// deleted, so it refuses when one is there.
func removeAll(dir string) error {
	mounts, err := selfMounts()
	if err == nil {
		for _, m := range mounts {
			if strings.HasPrefix(m.MountPoint, dir+"/") {
				return fmt.Errorf("not removing %s: %s is still mounted", dir, m.MountPoint)
			}
		}
	}
	return os.RemoveAll(dir)
}

func selfMounts() ([]mountinfo.Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mountinfo.Parse(f)
}
