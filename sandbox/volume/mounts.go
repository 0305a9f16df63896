package volume

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// Sources are the fds a sandbox's bind mounts are made from; Close them
// once the sandbox was created (its holder has opened its own).
type Sources struct{ fds []int }

// Close closes the fds.
func (s *Sources) Close() {
	for _, fd := range s.fds {
		_ = unix.Close(fd) // O_PATH: nothing to flush
	}
	s.fds = nil
}

// source names fd for the holder: the path it was found at, which has no
// symlink in it. The holder opens it again in the sandbox's mount
// namespace (a bind's source must be a mount of the caller's own), with
// no symlink followed (spec.Mount.NoSymlinks): a component replaced by a
// symlink meanwhile fails the sandbox instead of leading elsewhere.
func (s *Sources) source(fd int) (string, error) {
	s.fds = append(s.fds, fd)
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
}

// Mounts returns the bind mounts of vms, in their order, over the group's
// prepared volumes: config and secret volumes read-only whatever the
// mount says (as kubelet mounts them since Kubernetes 1.10). A host_path
// is checked (and made) here, as kubelet does at each pod start.
func (g *Group) Mounts(vols []spec.Volume, vms []spec.VolumeMount) ([]spec.Mount, *Sources, error) {
	src := &Sources{}
	var out []spec.Mount
	done := map[string]bool{} // one mount per path (spec refuses two different ones)
	for _, vm := range vms {
		if done[vm.Path] {
			continue
		}
		done[vm.Path] = true
		v := findVolume(vols, vm.Volume)
		if v == nil {
			src.Close()
			return nil, nil, fmt.Errorf("volume_mount of %s: no volume %q", vm.Path, vm.Volume)
		}
		fd, err := g.open(*v, vm.SubPath)
		if err != nil {
			src.Close()
			return nil, nil, fmt.Errorf("volume %s mounted on %s: %w", v.Name, vm.Path, err)
		}
		p, err := src.source(fd)
		if err != nil {
			src.Close()
			return nil, nil, fmt.Errorf("volume %s mounted on %s: %w", v.Name, vm.Path, err)
		}
		ro := vm.ReadOnly || v.Type == spec.VolumeConfig || v.Type == spec.VolumeSecret
		out = append(out, spec.Mount{Type: "bind", Source: p, Target: vm.Path, ReadOnly: ro, NoSymlinks: true})
	}
	return out, src, nil
}

func findVolume(vols []spec.Volume, name string) *spec.Volume {
	for i := range vols {
		if vols[i].Name == name {
			return &vols[i]
		}
	}
	return nil
}

// open returns an O_PATH fd of what a mount of v (at sub) binds.
func (g *Group) open(v spec.Volume, sub string) (int, error) {
	var root int
	var err error
	switch v.Type {
	case spec.VolumeHostPath:
		root, err = hostPath(v)
	default:
		root, err = unix.Open(g.volumeDir(v.Name), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil || sub == "" {
		return root, err
	}
	defer unix.Close(root)
	if v.Type == spec.VolumeConfig || v.Type == spec.VolumeSecret {
		// A file of the version in force: a sub_path mount of a config is
		// not updated by a reload, as in Kubernetes.
		data, err := readlinkat(root, dataLink)
		if err != nil {
			return -1, fmt.Errorf("volume not written: %w", err)
		}
		fd, err := openBeneath(root, data+"/"+sub, unix.O_PATH, 0)
		if err != nil {
			return -1, fmt.Errorf("sub_path %s: %w", sub, err)
		}
		return fd, nil
	}
	// A missing sub_path is made a directory (kubelet's subpath).
	fd, err := openBeneath(root, sub, unix.O_PATH, 0)
	if errors.Is(err, unix.ENOENT) {
		fd, err = mkdirBeneath(root, sub, 0o755)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, fmt.Errorf("sub_path %s goes through a symlink, which podsup does not follow", sub)
	}
	if err != nil {
		return -1, fmt.Errorf("sub_path %s: %w", sub, err)
	}
	return fd, nil
}

// hostPath checks v's path against its host_path_type, making it for
// DirectoryOrCreate and FileOrCreate (with no symlink in what it makes
// or walks through), and returns an O_PATH fd of it.
func hostPath(v spec.Volume) (int, error) {
	fd, err := unix.Open(v.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		switch v.HostPathType {
		case "DirectoryOrCreate":
			fd, err = createBeneathRoot(v.Path, true)
		case "FileOrCreate":
			fd, err = createBeneathRoot(v.Path, false)
		default:
			return -1, fmt.Errorf("host path %s does not exist", v.Path)
		}
	}
	if err != nil {
		return -1, fmt.Errorf("host path %s: %w", v.Path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	want, kind := map[string]uint32{
		"Directory": unix.S_IFDIR, "DirectoryOrCreate": unix.S_IFDIR,
		"File": unix.S_IFREG, "FileOrCreate": unix.S_IFREG,
		"Socket": unix.S_IFSOCK, "CharDevice": unix.S_IFCHR, "BlockDevice": unix.S_IFBLK,
	}[v.HostPathType], strings.TrimSuffix(v.HostPathType, "OrCreate")
	if want != 0 && st.Mode&unix.S_IFMT != want {
		unix.Close(fd)
		return -1, fmt.Errorf("host path %s is not a %s (host_path_type = %q)", v.Path, strings.ToLower(kind), v.HostPathType)
	}
	return fd, nil
}

// createBeneathRoot makes the host path p, a directory or an empty file
// (mode 0644, kubelet's), and its missing parents (0755), through no
// symlink.
func createBeneathRoot(p string, dir bool) (int, error) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	rel := strings.TrimPrefix(p, "/")
	if dir {
		return mkdirBeneath(root, rel, 0o755)
	}
	parent, err := mkdirBeneath(root, path.Dir(rel), 0o755)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	fd, err := openBeneath(parent, path.Base(rel), unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	return openBeneath(parent, path.Base(rel), unix.O_PATH, 0)
}
