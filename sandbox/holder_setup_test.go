package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// holderRoot is the sandbox's root as the host sees it: /proc/HOLDER/root.
// Paths under it must not cross a symlink of the rootfs (an absolute one
// would be resolved against the host's root, not the sandbox's).
func holderRoot(t *testing.T, rt *Runtime, id string) string {
	t.Helper()
	st, err := rt.SandboxStatus(id)
	if err != nil {
		t.Fatal(err)
	}
	if st.HolderPid <= 0 {
		t.Fatalf("sandbox %s has no holder (pid %d)", id, st.HolderPid)
	}
	return fmt.Sprintf("/proc/%d/root", st.HolderPid)
}

// A symlink inside the rootfs, absolute or climbing with "..", must be
// resolved inside the rootfs, as it will be once the sandbox has pivoted
// into it: a mount through it lands inside, and nothing outside the rootfs
// is created or mounted on. Joining the target to the rootfs path let the
// kernel follow such a symlink on the host: the mount point was created in
// the host's directory and the bind was lost with the old root.
func TestMountTargetThroughSymlinkStaysInsideRootfs(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	outside := t.TempDir() // where the symlinks point on the host
	rootfs := t.TempDir()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "marker"), []byte("bound"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(rootfs, "escape")); err != nil {
		t.Fatal(err)
	}
	climb := strings.Repeat("../", strings.Count(rootfs, "/")+2)
	if err := os.Symlink(climb, filepath.Join(rootfs, "climb")); err != nil {
		t.Fatal(err)
	}
	mustCreateSandbox(t, rt, "sym", spec.Sandbox{Namespaces: []string{"pid", "mount"}, Rootfs: rootfs,
		Mounts: []spec.Mount{
			{Type: "bind", Source: src, Target: "/escape/abs"},
			{Type: "bind", Source: filepath.Join(src, "marker"), Target: "/climb" + outside + "/file"},
			{Type: "tmpfs", Target: "/escape/tmp"},
		}})
	for _, name := range []string{"abs", "file", "tmp"} {
		if _, err := os.Lstat(filepath.Join(outside, name)); err == nil {
			t.Errorf("%s was created outside the rootfs, in the host's %s", name, outside)
		}
	}
	// Inside, both symlinks lead to rootfs/<outside>.
	inside := filepath.Join(holderRoot(t, rt, "sym"), outside)
	if b, err := os.ReadFile(filepath.Join(inside, "abs", "marker")); err != nil || string(b) != "bound" {
		t.Errorf("the bind through the absolute symlink is not inside the rootfs: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(inside, "file")); err != nil || string(b) != "bound" {
		t.Errorf("the file bind through the climbing symlink is not inside the rootfs: %q, %v", b, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(filepath.Join(inside, "tmp"), &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Errorf("the tmpfs through the absolute symlink is not inside the rootfs (statfs type %#x, %v)", fs.Type, err)
	}
}

// A read-only bind is read-only all the way down: a mount below its source
// (here a tmpfs the sandbox mounted first) comes along with the recursive
// bind and must not stay writable.
func TestReadOnlyBindIsRecursive(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	rootfs := t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCreateSandbox(t, rt, "ro", spec.Sandbox{Namespaces: []string{"pid", "mount"}, Rootfs: rootfs,
		Mounts: []spec.Mount{
			{Type: "bind", Source: file, Target: "/rofile", ReadOnly: true},
			{Type: "tmpfs", Target: "/data/sub"},
			// The source is a host path: the rootfs's /data, which by now
			// has the tmpfs on data/sub in the sandbox's mount namespace.
			{Type: "bind", Source: filepath.Join(rootfs, "data"), Target: "/ro", ReadOnly: true},
		}})
	root := holderRoot(t, rt, "ro")
	for _, p := range []string{"ro/top", "ro/sub/below", "rofile"} {
		err := os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644)
		if err == nil {
			t.Errorf("wrote /%s through a read-only bind", p)
		} else if !errors.Is(err, unix.EROFS) {
			t.Errorf("writing /%s: %v, want EROFS", p, err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "host" {
		t.Errorf("the host's file behind the read-only file bind: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(root, "data/sub/rw"), []byte("x"), 0o644); err != nil {
		t.Errorf("the tmpfs itself should stay writable where it was mounted: %v", err)
	}
}

// openRoot opens dir as an inRoot for the tests below, which need no
// mount namespace: they only create mount points.
func openRoot(t *testing.T, dir string) inRoot {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return inRoot{fd: fd, path: dir}
}

// Mount points are created inside the root whatever symlinks the path
// crosses: absolute, climbing, dangling, chained; a loop is an error.
func TestMountPointsAreCreatedInsideTheRoot(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	links := map[string]string{
		"abs":   outside,                   // absolute, dangling inside the root
		"climb": "../../../../../../../..", // ".." stops at the root
		"chain": "abs/deeper",              // relative, to another dangling one
		"loop":  "loop",
		"etc":   "/",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	root := openRoot(t, dir)
	cases := []struct {
		target string
		dir    bool
		want   string // where it must land, relative to dir
	}{
		{"/abs/a", true, outside + "/a"},
		{"/climb/b", true, "b"},
		{"/chain/c", false, outside + "/deeper/c"},
		{"/etc/passwd-podsup-test", false, "passwd-podsup-test"},
		{"/plain/d/e", true, "plain/d/e"},
		{"/", true, "."},
	}
	for _, c := range cases {
		fd, err := root.mountPoint(c.target, c.dir)
		if err != nil {
			t.Errorf("%s: %v", c.target, err)
			continue
		}
		var got, want unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		if err := unix.Stat(filepath.Join(dir, c.want), &want); err != nil {
			t.Errorf("%s: nothing at %s inside the root: %v", c.target, c.want, err)
			continue
		}
		if got.Ino != want.Ino || got.Dev != want.Dev {
			t.Errorf("%s: opened something else than %s inside the root", c.target, c.want)
		}
		if isDir := got.Mode&unix.S_IFMT == unix.S_IFDIR; isDir != c.dir {
			t.Errorf("%s: directory %v, want %v", c.target, isDir, c.dir)
		}
	}
	if _, err := root.mountPoint("/loop/x", true); !errors.Is(err, unix.ELOOP) {
		t.Errorf("a symlink loop: %v, want ELOOP", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created %d entries outside the root, in %s", len(ents), outside)
	}
	if _, err := os.Stat("/passwd-podsup-test"); err == nil {
		t.Error("created /passwd-podsup-test on the host")
	}
}

// Without openat2 the walk refuses any symlink rather than follow one
// outside the root.
func TestOpenNoSymlinksRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "a/up")); err != nil {
		t.Fatal(err)
	}
	root := openRoot(t, dir)
	fd, err := root.openNoSymlinks("a/b", unix.O_DIRECTORY)
	if err != nil {
		t.Fatalf("a/b: %v", err)
	}
	unix.Close(fd)
	if _, err := root.openNoSymlinks("a/up/etc", 0); !errors.Is(err, errSymlinkInTarget) {
		t.Errorf("a/up/etc: %v, want errSymlinkInTarget", err)
	}
	if _, err := root.openNoSymlinks("a/missing", 0); !errors.Is(err, unix.ENOENT) {
		t.Errorf("a/missing: %v, want ENOENT", err)
	}
}
