package volume

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// mountOne returns the bind mount of one volume_mount of v, or the error.
func mountOne(t *testing.T, g *Group, v spec.Volume, vm spec.VolumeMount) (spec.Mount, error) {
	t.Helper()
	vm.Volume = v.Name
	ms, src, err := g.Mounts([]spec.Volume{v}, []spec.VolumeMount{vm})
	if err != nil {
		return spec.Mount{}, err
	}
	src.Close()
	return ms[0], nil
}

// A sub_path is resolved inside its volume through no symlink: a link
// the processes planted in an empty_dir leads nowhere, whether it points
// out of the volume or inside it, is the sub_path itself or a directory
// on the way.
func TestSubPathRefusesSymlinks(t *testing.T) {
	g := Open(t.TempDir(), "g")
	v := spec.Volume{Name: "data", Type: spec.VolumeEmptyDir}
	if err := g.Prepare([]spec.Volume{v}); err != nil {
		t.Fatal(err)
	}
	dir := g.volumeDir("data")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "near")); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"link", "link/inner", "near", "near/inner"} {
		if _, err := mountOne(t, g, v, spec.VolumeMount{Path: "/x", SubPath: sub}); err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("sub_path %s through a symlink: %v, want a refusal naming the symlink", sub, err)
		}
	}
	for _, p := range []string{filepath.Join(outside, "inner"), filepath.Join(dir, "real", "inner")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a directory was made through the symlink: %v", err)
		}
	}

	// A missing sub_path is made a directory inside the volume.
	m, err := mountOne(t, g, v, spec.VolumeMount{Path: "/x", SubPath: "a/b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "a", "b"); m.Source != want || !m.NoSymlinks {
		t.Errorf("mount %+v, want source %s with NoSymlinks", m, want)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "a", "b")); err != nil || !fi.IsDir() {
		t.Errorf("sub_path a/b was not made a directory: %v", err)
	}
}

// DirectoryOrCreate and FileOrCreate make what is missing, through no
// symlink.
func TestHostPathOrCreateRefusesSymlinks(t *testing.T) {
	g := Open(t.TempDir(), "g")
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// One link is absolute, the other relative: neither is followed.
	if err := os.Symlink(outside, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("outside", filepath.Join(base, "near")); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"link", "near"} {
		for _, typ := range []string{"DirectoryOrCreate", "FileOrCreate"} {
			v := spec.Volume{Name: "h", Type: spec.VolumeHostPath, Path: filepath.Join(base, link, "made"), HostPathType: typ}
			if _, err := mountOne(t, g, v, spec.VolumeMount{Path: "/x"}); err == nil || !strings.Contains(err.Error(), "symlink") {
				t.Errorf("%s through symlink %s: %v, want a refusal naming the symlink", typ, link, err)
			}
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("something was made through a symlink: %v", ents)
	}

	for typ, isDir := range map[string]bool{"DirectoryOrCreate": true, "FileOrCreate": false} {
		p := filepath.Join(base, typ, "deep", "made")
		v := spec.Volume{Name: "h", Type: spec.VolumeHostPath, Path: p, HostPathType: typ}
		if _, err := mountOne(t, g, v, spec.VolumeMount{Path: "/x"}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.IsDir() != isDir {
			t.Errorf("%s made %v (%v), want a directory: %v", typ, fi, err, isDir)
		} else if !isDir && fi.Mode().Perm() != 0o644 {
			t.Errorf("FileOrCreate made mode %v, want 0644", fi.Mode().Perm())
		}
	}
}

// host_path_type checks what the path is, as kubelet's checks do.
func TestHostPathTypeChecks(t *testing.T) {
	g := Open(t.TempDir(), "g")
	base := t.TempDir()
	file, sock := filepath.Join(base, "file"), filepath.Join(base, "sock")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		path, typ, err string // err "" for a mount
	}{
		{base, "Directory", ""},
		{file, "Directory", "is not a directory"},
		{file, "File", ""},
		{base, "File", "is not a file"},
		{sock, "Socket", ""},
		{file, "Socket", "is not a socket"},
		{"/dev/null", "CharDevice", ""},
		{file, "CharDevice", "is not a chardevice"},
		{file, "DirectoryOrCreate", "is not a directory"},
		{base, "FileOrCreate", "is not a file"},
		{filepath.Join(base, "missing"), "Directory", "does not exist"},
		{filepath.Join(base, "missing"), "", "does not exist"},
		{sock, "", ""},
	} {
		v := spec.Volume{Name: "h", Type: spec.VolumeHostPath, Path: c.path, HostPathType: c.typ}
		_, err := mountOne(t, g, v, spec.VolumeMount{Path: "/x"})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s as %q: %v", c.path, c.typ, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s as %q: %v, want %q", c.path, c.typ, err, c.err)
		}
	}
}

// versions are the version directories of a config or secret volume.
func versions(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A changed config is a new version swapped in by ..data; the old one
// is removed, an unchanged one is kept, and a name that went away loses
// its link.
func TestConfigVersionsAreSwappedAndCleanedUp(t *testing.T) {
	g := Open(t.TempDir(), "g")
	conf := func(files ...spec.VolumeFile) []spec.Volume {
		return []spec.Volume{{Name: "conf", Type: spec.VolumeConfig, Files: files}}
	}
	if err := g.Prepare(conf(spec.VolumeFile{Name: "a", Content: "1"}, spec.VolumeFile{Name: "d/b", Content: "2"})); err != nil {
		t.Fatal(err)
	}
	dir := g.volumeDir("conf")
	first, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	if v := versions(t, dir); len(v) != 1 || v[0] != first {
		t.Fatalf("versions %v, want only %s", v, first)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "b")); string(b) != "2" {
		t.Errorf("d/b reads %q", b)
	}

	if changed, err := g.Update(conf(spec.VolumeFile{Name: "a", Content: "1"}, spec.VolumeFile{Name: "d/b", Content: "2"})); err != nil || len(changed) > 0 {
		t.Fatalf("update with the same files: changed %v, %v; want none", changed, err)
	}
	if now, _ := os.Readlink(filepath.Join(dir, dataLink)); now != first {
		t.Errorf("an unchanged volume got a new version: %s, then %s", first, now)
	}

	if changed, err := g.Update(conf(spec.VolumeFile{Name: "a", Content: "changed"})); err != nil || len(changed) != 1 || changed[0] != "conf" {
		t.Fatalf("update with other files: changed %v, %v; want [conf]", changed, err)
	}
	second, _ := os.Readlink(filepath.Join(dir, dataLink))
	if second == first {
		t.Fatalf("a changed volume kept its version %s", first)
	}
	if v := versions(t, dir); len(v) != 1 || v[0] != second {
		t.Errorf("versions %v after the update, want only %s: the old one is left", v, second)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "changed" {
		t.Errorf("a reads %q after the update", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "d")); !os.IsNotExist(err) {
		t.Errorf("the link of a name that went away is left: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, dataLink+"_tmp")); !os.IsNotExist(err) {
		t.Errorf("..data_tmp is left: %v", err)
	}
}

// A secret's files are 0400, a config's 0644, whatever the umask.
func TestFileModes(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	g := Open(t.TempDir(), "g")
	vols := []spec.Volume{
		{Name: "s", Type: spec.VolumeSecret, Files: []spec.VolumeFile{{Name: "k", Content: "x"}}},
		{Name: "c", Type: spec.VolumeConfig, Files: []spec.VolumeFile{{Name: "k", Content: "x"}}},
	}
	if err := g.Prepare(vols); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"s": 0o400, "c": 0o644} {
		fi, err := os.Stat(filepath.Join(g.volumeDir(name), "k"))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("volume %s: mode %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
}

// SetPeers rewrites the hosts file the sandbox binds, in place (the same
// inode), with a line per peer, and drops the lines of peers that left.
func TestSetPeersRewritesHostsInPlace(t *testing.T) {
	g := Open(t.TempDir(), "g")
	sb := spec.Sandbox{Namespaces: []string{"mount", "net", "uts"}, Hostname: "web-1"}
	ms, err := g.NameMounts(Names{Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Target != "/etc/hosts" {
		t.Fatalf("name mounts %+v, want /etc/hosts and /etc/resolv.conf", ms)
	}
	// The sandbox's bind holds the file that was there when it was made,
	// as this open file does.
	bound, err := os.Open(ms[0].Source)
	if err != nil {
		t.Fatal(err)
	}
	defer bound.Close()
	read := func() string {
		b, err := os.ReadFile(procFD(int(bound.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := g.SetPeers(Names{Sandbox: sb, Peers: map[string]string{"db": "10.88.0.3", "cache": "10.88.0.4"}}); err != nil {
		t.Fatal(err)
	}
	b := read()
	for _, want := range []string{"127.0.1.1\tweb-1\n", "10.88.0.3\tdb\n", "10.88.0.4\tcache\n"} {
		if !strings.Contains(b, want) {
			t.Errorf("the bound hosts file lacks %q:\n%s", want, b)
		}
	}
	if err := g.SetPeers(Names{Sandbox: sb, Peers: map[string]string{"db": "10.88.0.3"}}); err != nil {
		t.Fatal(err)
	}
	want := string(hostsContent(Names{Sandbox: sb, Peers: map[string]string{"db": "10.88.0.3"}}, true))
	if got := read(); got != want {
		t.Errorf("after cache left, the bound hosts file is:\n%s\nwant:\n%s", got, want)
	}

	// A sandbox without a hosts file of its own reads the host's: nothing
	// to rewrite.
	other := Open(t.TempDir(), "other")
	if err := other.SetPeers(Names{Sandbox: sb, Peers: map[string]string{"db": "10.88.0.3"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other.Dir, "etc", "hosts")); !os.IsNotExist(err) {
		t.Errorf("SetPeers made a hosts file for a sandbox that had none: %v", err)
	}
}

// A volume's mode replaces the default, and an fs_group owns the files
// with group read added, as kubelet's SetVolumeOwnership does; a change
// of the fs_group alone is a new version.
func TestModeAndFSGroup(t *testing.T) {
	g := Open(t.TempDir(), "g")
	vols := []spec.Volume{
		{Name: "s", Type: spec.VolumeSecret, Files: []spec.VolumeFile{{Name: "k", Content: "x"}}},
		{Name: "c", Type: spec.VolumeConfig, Mode: 0o600, Files: []spec.VolumeFile{{Name: "k", Content: "x"}}},
		// 0644 already has group read: only the group changes.
		{Name: "r", Type: spec.VolumeConfig, Files: []spec.VolumeFile{{Name: "k", Content: "x"}}},
		{Name: "e", Type: spec.VolumeEmptyDir},
	}
	check := func(name string, mode os.FileMode, gid int) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(g.volumeDir(name), "k"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode || int(fi.Sys().(*syscall.Stat_t).Gid) != gid {
			t.Errorf("volume %s: mode %v gid %d, want %v gid %d", name, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid, mode, gid)
		}
	}
	if err := g.Prepare(vols); err != nil {
		t.Fatal(err)
	}
	check("s", 0o400, os.Getegid())
	check("c", 0o600, os.Getegid())

	if err := g.SetFSGroup("4242"); err != nil {
		t.Fatal(err)
	}
	changed, err := g.Update(vols)
	if err != nil || len(changed) != 3 {
		t.Fatalf("update for a new fs_group: changed %v, %v; want s, c and r", changed, err)
	}
	check("s", 0o440, 4242)
	check("c", 0o640, 4242)
	check("r", 0o644, 4242)
	if err := g.Prepare(vols); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(g.volumeDir("e"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != os.ModeDir|os.ModeSetgid|0o777 || fi.Sys().(*syscall.Stat_t).Gid != 4242 {
		t.Errorf("empty_dir: mode %v gid %d, want drwxrwsrwx gid 4242", fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid)
	}
	if err := g.SetFSGroup("no-such-group-podsup"); err == nil {
		t.Error("an unknown fs_group name was accepted")
	}
}
