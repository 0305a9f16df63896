package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// dataLink is the symlink whose swap publishes a volume's new files
// (kubelet's AtomicWriter: pkg/volume/util/atomic_writer.go). The volume
// directory holds
//
//	..2026_11_27_15_49_34.123456789/   the files of one version
//	..data -> ..2026_11_27_15_49_34.123456789
//	NAME -> ..data/NAME                for each top-level name
//
// A new version is written to a new directory, then ..data is replaced by
// rename(2): a reader that follows NAME sees the old files or the new,
// never a mix. Names starting with ".." are the writer's (spec refuses
// them as file names).
const dataLink = "..data"

// resolveHostile are openat2's rules for paths someone else may have
// made: no symlink, no magic link, no way out of the directory.
const resolveHostile = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens name under dirfd with resolveHostile.
func openBeneath(dirfd int, name string, flags uint64, mode uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveHostile})
		if err != unix.EAGAIN && err != unix.EINTR { // a rename raced the lookup
			return fd, err
		}
	}
}

// mkdirBeneath opens the directory rel under dirfd, making each missing
// component with mode, and returns an O_PATH fd of it. No component is
// reached through a symlink.
func mkdirBeneath(dirfd int, rel string, mode uint32) (int, error) {
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		fd, err := openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(cur, c, mode); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return -1, fmt.Errorf("making %s: %w", c, err)
			}
			fd, err = openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				return -1, fmt.Errorf("%s is a symlink, which podsup does not follow here", c)
			}
			return -1, fmt.Errorf("opening %s: %w", c, err)
		}
		cur = fd
	}
	return cur, nil
}

// fileMode is the mode of a volume's files: its mode, else kubelet's
// default 0644 (defaultMode) for a config and 0400 for a secret, which
// only its owner (root) may read; with an fs_group (gid >= 0) the group
// may read them too, as kubelet's SetVolumeOwnership adds 0440.
func fileMode(v spec.Volume, gid int) uint32 {
	m := v.Mode
	switch {
	case m != 0:
	case v.Type == spec.VolumeSecret:
		m = 0o400
	default:
		m = 0o644
	}
	if gid >= 0 {
		m |= 0o440
	}
	return m
}

// contents reads v's files: inline content, or its source's as it is now.
func contents(v spec.Volume) (map[string][]byte, error) {
	out := make(map[string][]byte, len(v.Files))
	for _, f := range v.Files {
		if f.Source == "" {
			out[f.Name] = []byte(f.Content)
			continue
		}
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Name, err)
		}
		out[f.Name] = b
	}
	return out, nil
}

// writeFiles makes dir hold v's files, swapping in a new version when
// they changed (and saying so).
// gid, when >= 0, is their group (fs_group).
func writeFiles(dir string, v spec.Volume, gid int) (changed bool, err error) {
	files, err := contents(v)
	if err != nil {
		return false, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return false, err
	}
	dirfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(dirfd)
	mode := fileMode(v, gid)
	old, _ := readlinkat(dirfd, dataLink)
	if old != "" && same(dirfd, old, files, mode, gid) {
		return false, nil
	}
	return true, swapIn(dir, dirfd, old, files, mode, gid)
}

// swapIn writes files as a new version of the volume directory dir
// (dirfd) and publishes it, removing the version old.
func swapIn(dir string, dirfd int, old string, files map[string][]byte, mode uint32, gid int) error {
	version := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	if version == old {
		version += "_"
	}
	if err := unix.Mkdirat(dirfd, version, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", version, err)
	}
	vfd, err := openBeneath(dirfd, version, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(vfd)
	for name, b := range files {
		if err := writeFile(vfd, name, b, mode, gid); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	// ..data_tmp may be a leftover of a write that died half way.
	_ = unix.Unlinkat(dirfd, dataLink+"_tmp", 0)
	if err := unix.Symlinkat(version, dirfd, dataLink+"_tmp"); err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, dataLink+"_tmp", dirfd, dataLink); err != nil {
		return err
	}
	if err := linkTopNames(dirfd, files); err != nil {
		return err
	}
	if old != "" && strings.HasPrefix(old, "..") && !strings.Contains(old, "/") {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// writeFile creates name (with its parents) under vfd, a directory only
// the writer has seen.
func writeFile(vfd int, name string, b []byte, mode uint32, gid int) error {
	parent := vfd
	if d := path.Dir(name); d != "." {
		fd, err := mkdirBeneath(vfd, d, 0o755)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		parent = fd
	}
	fd, err := openBeneath(parent, path.Base(name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, uint64(mode))
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if gid >= 0 {
		if err := f.Chown(-1, gid); err != nil {
			return err
		}
	}
	if err := f.Chmod(os.FileMode(mode)); err != nil { // not the umask's
		return err
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Close()
}

// linkTopNames makes NAME -> ..data/NAME for each top-level name of
// files and removes the links of names that are gone.
func linkTopNames(dirfd int, files map[string][]byte) error {
	top := map[string]bool{}
	for name := range files {
		top[strings.SplitN(name, "/", 2)[0]] = true
	}
	for name := range top {
		want := dataLink + "/" + name
		if got, err := readlinkat(dirfd, name); err == nil && got == want {
			continue
		}
		_ = unix.Unlinkat(dirfd, name+"..tmp", 0)
		if err := unix.Symlinkat(want, dirfd, name+"..tmp"); err != nil {
			return err
		}
		if err := unix.Renameat(dirfd, name+"..tmp", dirfd, name); err != nil {
			return err
		}
	}
	names, err := listDir(dirfd)
	if err != nil {
		return err
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "..") && !top[name] {
			if err := unix.Unlinkat(dirfd, name, 0); err != nil {
				return fmt.Errorf("removing %s: %w", name, err)
			}
		}
	}
	return nil
}

// same reports whether the version directory old holds exactly files,
// with mode and, when gid >= 0, that group.
func same(dirfd int, old string, files map[string][]byte, mode uint32, gid int) bool {
	for name, b := range files {
		fd, err := openBeneath(dirfd, old+"/"+name, unix.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return false
		}
		f := os.NewFile(uintptr(fd), name)
		st, err := f.Stat()
		got, rerr := io.ReadAll(io.LimitReader(f, int64(len(b))+1))
		f.Close()
		if err != nil || rerr != nil || uint32(st.Mode().Perm()) != mode || !bytes.Equal(got, b) {
			return false
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); gid >= 0 && (!ok || int(sys.Gid) != gid) {
			return false
		}
	}
	// A name that went away changes the version too.
	n := 0
	_ = filepath.WalkDir(procFD(dirfd)+"/"+old, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n == len(files)
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func listDir(dirfd int) ([]string, error) {
	fd, err := openBeneath(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

func procFD(fd int) string { return "/proc/self/fd/" + fmt.Sprint(fd) }
