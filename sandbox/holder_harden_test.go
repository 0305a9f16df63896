package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// isReadOnly says whether the mount p is on (seen from the host through a
// holder's /proc/PID/root) is read-only.
func isReadOnly(t *testing.T, p string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		t.Fatalf("statfs %s: %v", p, err)
	}
	return fs.Flags&unix.ST_RDONLY != 0
}

// isTmpfsOfItsOwn: p is a tmpfs, and not the host's same path.
func isTmpfsOfItsOwn(t *testing.T, p, host string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		return false
	}
	var in, out unix.Stat_t
	if unix.Stat(p, &in) != nil || unix.Stat(host, &out) != nil {
		return false
	}
	return in.Dev != out.Dev
}

// A sandbox without a rootfs but with read_only_root_filesystem sees the
// host's tree read-only (ProtectSystem=strict), its own tmpfs and
// writable binds still writable, /tmp and /var/tmp private; with a proc
// mount, runc's masked paths read empty and its read-only paths are
// read-only.
func TestReadOnlyHostViewPrivateTmpAndMaskedPaths(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	// Not under /tmp: the sandbox has a /tmp of its own (a checkout under
	// /tmp, as CI's may be, makes its directory under /var/lib).
	parent, _ := filepath.Abs(".")
	if strings.HasPrefix(parent+"/", "/tmp/") || strings.HasPrefix(parent+"/", "/var/tmp/") {
		parent = "/var/lib"
	}
	host, err := os.MkdirTemp(parent, "podsup-ro-test-")
	if err != nil {
		t.Fatal(err)
	}
	host, _ = filepath.Abs(host)
	t.Cleanup(func() { _ = os.RemoveAll(host) })
	bound := filepath.Join(host, "rw")
	if err := os.Mkdir(bound, 0o755); err != nil {
		t.Fatal(err)
	}
	mustCreateSandbox(t, rt, "strict", spec.Sandbox{Namespaces: []string{"pid", "mount"},
		ReadOnlyRootFilesystem: true, PrivateTmp: true,
		Mounts: []spec.Mount{
			{Type: "proc", Target: "/proc"},
			{Type: "tmpfs", Target: filepath.Join(host, "scratch")},
			{Type: "bind", Source: bound, Target: bound},
		}})
	root := holderRoot(t, rt, "strict")
	in := func(p string) string { return filepath.Join(root, p) }

	err = os.WriteFile(in(filepath.Join(host, "file")), []byte("x"), 0o644)
	if !errors.Is(err, unix.EROFS) {
		t.Errorf("writing the host's tree from the sandbox: %v, want EROFS", err)
	}
	if !isReadOnly(t, in("/")) || !isReadOnly(t, in("/usr")) {
		t.Error("the host's / or /usr is writable from the sandbox")
	}
	for _, p := range []string{filepath.Join(host, "scratch", "f"), filepath.Join(bound, "f"), "/tmp/f", "/var/tmp/f"} {
		if err := os.WriteFile(in(p), []byte("x"), 0o644); err != nil {
			t.Errorf("the sandbox's own mount %s should be writable: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(bound, "f")); err != nil {
		t.Errorf("the write through the writable bind did not reach the host: %v", err)
	}
	for _, p := range []string{"/tmp", "/var/tmp"} {
		if !isTmpfsOfItsOwn(t, in(p), p) {
			t.Errorf("%s is not a tmpfs of the sandbox's own", p)
		}
		var st unix.Stat_t
		if err := unix.Stat(in(p), &st); err != nil || st.Mode&0o7777 != 0o1777 {
			t.Errorf("%s: mode %o, %v; want 1777", p, st.Mode&0o7777, err)
		}
	}
	if _, err := os.Stat("/tmp/f"); err == nil {
		t.Error("the sandbox's /tmp/f is in the host's /tmp")
	}
	if !isReadOnly(t, in("/proc/sys")) {
		t.Error("/proc/sys is writable in the sandbox")
	}
	if isReadOnly(t, in("/proc")) || isReadOnly(t, in("/dev")) {
		t.Error("/proc or /dev became read-only: API filesystems keep their flags")
	}
	masked := 0
	for _, p := range spec.MaskedPaths {
		if _, err := os.Stat(p); err != nil {
			continue // this kernel has no such file
		}
		masked++
		ents, derr := os.ReadDir(in(p))
		b, ferr := os.ReadFile(in(p))
		if len(ents) > 0 || len(b) > 0 || derr != nil && ferr != nil {
			t.Errorf("masked path %s: %d entries, %d bytes (%v, %v); want it empty", p, len(ents), len(b), derr, ferr)
		}
	}
	if masked == 0 {
		t.Error("none of the masked paths is on this host: nothing tested")
	}
	// From inside too: the masks are in the sandbox's mount namespace.
	res, err := runIn(testCtx(t), rt, "strict", execrun.Request{
		Argv:  []string{"sh", "-c", "cat /proc/keys /proc/timer_list 2>/dev/null | wc -c; echo x >/proc/sys/kernel/hostname 2>&1 || echo refused"},
		RunAs: proc.RunAs{Env: []string{"PATH=/usr/bin:/bin"}}, OutputLimit: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Output); !strings.HasPrefix(out, "0\n") || !strings.Contains(out, "Read-only file system") {
		t.Errorf("inside: %q; want /proc/keys and /proc/timer_list empty, the write to /proc/sys refused with EROFS", out)
	}
}

// A bind whose source is in the host's /tmp still binds it with
// private_tmp: the source is the host's, not the private /tmp's.
func TestPrivateTmpBindsAHostTmpSource(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	src := t.TempDir() // under the host's /tmp
	if err := os.WriteFile(filepath.Join(src, "from-host"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The target outside /tmp, made here: a sandbox without a rootfs
	// makes a missing target on the host's file system.
	target, err := os.MkdirTemp("/var/lib", "podsup-tmpbind-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(target) })
	mustCreateSandbox(t, rt, "tmpbind", spec.Sandbox{Namespaces: []string{"mount"}, PrivateTmp: true,
		Mounts: []spec.Mount{{Type: "bind", Source: src, Target: target, ReadOnly: true}}})
	root := holderRoot(t, rt, "tmpbind")
	if _, err := os.Stat(filepath.Join(root, target, "from-host")); err != nil {
		t.Errorf("the bind of the host's %s: %v", src, err)
	}
	if !isTmpfsOfItsOwn(t, filepath.Join(root, "/tmp"), "/tmp") {
		t.Error("/tmp is not private")
	}
}

// proc_mount = "Unmasked" leaves /proc as the kernel shows it.
func TestProcMountUnmasked(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	mustCreateSandbox(t, rt, "unmasked", spec.Sandbox{Namespaces: []string{"pid", "mount"}, ProcMount: spec.ProcMountUnmasked,
		Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}})
	root := holderRoot(t, rt, "unmasked")
	if isReadOnly(t, filepath.Join(root, "/proc/sys")) {
		t.Error("/proc/sys is read-only with proc_mount Unmasked")
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "/proc/kcore"), &st); err == nil && st.Rdev == unix.Mkdev(1, 3) {
		t.Error("/proc/kcore is masked with proc_mount Unmasked")
	}
}

// In a rootfs, read_only_root_filesystem makes the root read-only (a write
// fails with EROFS) and leaves the sandbox's own tmpfs writable.
func TestReadOnlyRootfs(t *testing.T) {
	testproc.NeedRoot(t)
	if _, err := os.Readlink("/bin"); err != nil {
		t.Skip("host without a merged /usr: the rootfs would need copies of /bin and /lib")
	}
	rt := newTestRuntime(t)
	rootfs := t.TempDir()
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + l); err == nil {
			_ = os.Symlink(target, filepath.Join(rootfs, l))
		}
	}
	mustCreateSandbox(t, rt, "rorootfs", spec.Sandbox{Namespaces: []string{"pid", "mount"}, Rootfs: rootfs,
		ReadOnlyRootFilesystem: true, PrivateTmp: true,
		Mounts: []spec.Mount{
			{Type: "bind", Source: "/usr", Target: "/usr", ReadOnly: true},
			{Type: "proc", Target: "/proc"},
		}})
	res, err := runIn(testCtx(t), rt, "rorootfs", execrun.Request{
		Argv:  []string{"sh", "-c", "touch /x 2>&1; echo y >/tmp/y && cat /tmp/y; wc -c </proc/keys"},
		RunAs: proc.RunAs{Env: []string{"PATH=/usr/bin:/bin"}}, OutputLimit: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	if !strings.Contains(out, "Read-only file system") || !strings.Contains(out, "y\n0\n") {
		t.Errorf("inside: %q; want touch /x refused with EROFS, /tmp writable, /proc/keys empty", out)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "x")); err == nil {
		t.Error("the write reached the rootfs")
	}
}
