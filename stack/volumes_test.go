package stack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
)

// volumeConfig is a group in its own mount and network namespaces with a
// memory empty_dir, a config and a secret volume, host aliases and a DNS
// list; conf is the config volume's file.
func volumeConfig(conf string) spec.Config {
	return spec.Config{Groups: []spec.Group{{Name: "web",
		Sandbox: &spec.Sandbox{Namespaces: []string{"pid", "mount", "net", "uts"}, Hostname: "web-1",
			HostAliases: []spec.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db", "db.local"}}},
			DNS:         &spec.DNSConfig{Nameservers: []string{"10.9.9.9"}, Searches: []string{"svc.local"}, Options: []string{"ndots:2"}}},
		Volumes: []spec.Volume{
			{Name: "cache", Type: spec.VolumeEmptyDir, Medium: "memory", SizeLimit: 1 << 20},
			{Name: "disk", Type: spec.VolumeEmptyDir},
			{Name: "conf", Type: spec.VolumeConfig, Files: []spec.VolumeFile{{Name: "app.conf", Content: conf}}},
			{Name: "token", Type: spec.VolumeSecret, Files: []spec.VolumeFile{{Name: "token", Content: "s3cret"}}},
		},
		Processes: []spec.Process{{Name: "app",
			Command: []string{"sh", "-c", "echo start >> /cache/starts; echo start >> /disk/starts; exec sleep 600"},
			VolumeMounts: []spec.VolumeMount{{Volume: "cache", Path: "/cache"}, {Volume: "disk", Path: "/disk"},
				{Volume: "conf", Path: "/etc/app"}, {Volume: "token", Path: "/run/secrets"}}}},
	}}}
}

func readIn(t *testing.T, pid int, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "root", p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A group's volumes: an empty_dir keeps its files across a restart of
// the process and is gone with the group; a secret is 0400 and
// read-only; a config volume changes on reload under a running process;
// /etc/hosts and /etc/resolv.conf say what the sandbox block says.
func TestVolumesAndNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: namespaces and mounts")
	}
	instance, state := newInstance(), filepath.Join(t.TempDir(), "state")
	st, err := stack.Start(context.Background(), volumeConfig("v1\n"), stack.Options{Instance: instance, RuntimeDir: t.TempDir(), StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pid := runningPid(t, st.Supervisor(), "web", "app")

	hosts := readIn(t, pid, "/etc/hosts")
	for _, want := range []string{"127.0.0.1\tlocalhost", "127.0.1.1\tweb-1", "10.1.2.3\tdb\tdb.local"} {
		if !strings.Contains(hosts, want+"\n") {
			t.Errorf("the sandbox's /etc/hosts has no line %q:\n%s", want, hosts)
		}
	}
	resolv := readIn(t, pid, "/etc/resolv.conf")
	for _, want := range []string{"nameserver 10.9.9.9\n", "search svc.local", "options ndots:2"} {
		if !strings.Contains(resolv, want) {
			t.Errorf("the sandbox's /etc/resolv.conf has no %q:\n%s", want, resolv)
		}
	}

	secret := filepath.Join("/proc", strconv.Itoa(pid), "root", "run/secrets")
	fi, err := os.Stat(filepath.Join(secret, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o400 {
		t.Errorf("the secret's mode is %v, want 0400", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(secret, "new"), []byte("x"), 0o600); !errors.Is(err, unix.EROFS) {
		t.Errorf("writing into the secret volume: %v, want EROFS", err)
	}

	// A restart keeps the empty_dirs' files.
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var pid2 int
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pid2 = runningPid(t, st.Supervisor(), "web", "app"); pid2 != pid && readIn(t, pid2, "/cache/starts") == "start\nstart\n" {
			break
		}
	}
	for _, p := range []string{"/cache/starts", "/disk/starts"} {
		if got := readIn(t, pid2, p); got != "start\nstart\n" {
			t.Errorf("%s after a restart: %q, want two starts", p, got)
		}
	}

	// A reload changes the config volume's file, not the process.
	if _, err := st.Reload(volumeConfig("v2\n")); err != nil {
		t.Fatal(err)
	}
	if got := readIn(t, pid2, "/etc/app/app.conf"); got != "v2\n" {
		t.Errorf("app.conf after the reload: %q, want v2", got)
	}
	if now := runningPid(t, st.Supervisor(), "web", "app"); now != pid2 {
		t.Errorf("the reload restarted the process (%d, then %d)", pid2, now)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, instance, pid2)
	if _, err := os.Stat(filepath.Join(state, "web")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the group's volumes are still there after it stopped: %v", err)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), state) {
		t.Errorf("a mount under the state directory is left:\n%s", mi)
	}
}

// Stack.SetPeers reaches the running sandbox: its /etc/hosts, a bind of
// the file SetPeers rewrites, gets a line per peer group and loses the
// lines of the peers that left.
func TestSetPeersReachesTheSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: namespaces and mounts")
	}
	instance := newInstance()
	cfg := spec.Config{Groups: []spec.Group{{Name: "web",
		Sandbox:   &spec.Sandbox{Namespaces: []string{"mount", "net"}},
		Processes: []spec.Process{{Name: "app", Command: []string{"sleep", "600"}}},
	}}}
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, RuntimeDir: t.TempDir(), StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pid := runningPid(t, st.Supervisor(), "web", "app")

	if err := st.SetPeers("web", map[string]string{"db": "10.88.0.3", "cache": "10.88.0.4"}); err != nil {
		t.Fatal(err)
	}
	hosts := readIn(t, pid, "/etc/hosts")
	for _, want := range []string{"10.88.0.3\tdb\n", "10.88.0.4\tcache\n"} {
		if !strings.Contains(hosts, want) {
			t.Errorf("the sandbox's /etc/hosts lacks %q:\n%s", want, hosts)
		}
	}
	if err := st.SetPeers("web", map[string]string{"db": "10.88.0.3"}); err != nil {
		t.Fatal(err)
	}
	if hosts := readIn(t, pid, "/etc/hosts"); strings.Contains(hosts, "cache") || !strings.HasSuffix(hosts, "10.88.0.3\tdb\n") {
		t.Errorf("after cache left, the sandbox's /etc/hosts is:\n%s", hosts)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, instance, pid)
}

// restart_on_change: a reload that changes a config volume restarts the
// running processes that mount it, and only those; the others see the
// files change under them, and a reload that changes nothing restarts
// nothing.
func TestReloadRestartsOnChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: namespaces and mounts")
	}
	cfgWith := func(conf string) spec.Config {
		return spec.Config{Groups: []spec.Group{{Name: "web",
			Sandbox: &spec.Sandbox{Namespaces: []string{"mount"}},
			Volumes: []spec.Volume{
				{Name: "boot", Type: spec.VolumeConfig, RestartOnChange: true, Files: []spec.VolumeFile{{Name: "app.conf", Content: conf}}},
				{Name: "live", Type: spec.VolumeConfig, Files: []spec.VolumeFile{{Name: "app.conf", Content: conf}}},
			},
			Processes: []spec.Process{
				{Name: "reads-once", Command: []string{"sleep", "600"}, VolumeMounts: []spec.VolumeMount{{Volume: "boot", Path: "/etc/boot"}}},
				{Name: "rereads", Command: []string{"sleep", "600"}, VolumeMounts: []spec.VolumeMount{{Volume: "live", Path: "/etc/live"}}},
			},
		}}}
	}
	instance := newInstance()
	st, err := stack.Start(context.Background(), cfgWith("v1\n"), stack.Options{Instance: instance, RuntimeDir: t.TempDir(), StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	once, live := runningPid(t, st.Supervisor(), "web", "reads-once"), runningPid(t, st.Supervisor(), "web", "rereads")

	// The same files: nothing to restart.
	if _, err := st.Reload(cfgWith("v1\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a restart would be under way
	if now := runningPid(t, st.Supervisor(), "web", "reads-once"); now != once {
		t.Errorf("a reload that changed no file restarted reads-once (%d, then %d)", once, now)
	}

	if _, err := st.Reload(cfgWith("v2\n")); err != nil {
		t.Fatal(err)
	}
	var once2 int
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if once2 = runningPid(t, st.Supervisor(), "web", "reads-once"); once2 != once && once2 != 0 {
			break
		}
	}
	if once2 == once {
		t.Fatalf("the change of a restart_on_change volume did not restart reads-once (pid %d)", once)
	}
	if got := readIn(t, once2, "/etc/boot/app.conf"); got != "v2\n" {
		t.Errorf("reads-once restarted with app.conf %q, want v2", got)
	}
	if now := runningPid(t, st.Supervisor(), "web", "rereads"); now != live {
		t.Errorf("rereads mounts no restart_on_change volume but was restarted (%d, then %d)", live, now)
	}
	if got := readIn(t, live, "/etc/live/app.conf"); got != "v2\n" {
		t.Errorf("rereads sees app.conf %q, want v2", got)
	}
	if gs, ok := st.Supervisor().Status().Group("web"); !ok {
		t.Fatal("no status of web")
	} else if p, _ := gs.Process("reads-once"); p.RestartCount != 1 {
		t.Errorf("reads-once restart count %d, want 1", p.RestartCount)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, instance, once, once2, live)
}

// fs_group: a process that is not root reads its group's secret (0440,
// the fs_group's, which the process gets as a supplemental group) and
// writes into an empty_dir whose files are the fs_group's too, as a pod's
// fsGroup makes them.
func TestNonRootProcessReadsItsSecret(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: namespaces, mounts and another user")
	}
	const gid = 4242
	cfg := spec.Config{Groups: []spec.Group{{Name: "web", FSGroup: strconv.Itoa(gid),
		Sandbox: &spec.Sandbox{Namespaces: []string{"mount"}},
		Volumes: []spec.Volume{
			{Name: "token", Type: spec.VolumeSecret, Files: []spec.VolumeFile{{Name: "token", Content: "s3cret"}}},
			{Name: "out", Type: spec.VolumeEmptyDir},
		},
		Processes: []spec.Process{{Name: "app", User: "65534", Group: "65534",
			Command:      []string{"sh", "-c", "cat /run/secrets/token > /out/got; touch /out/done; exec sleep 600"},
			VolumeMounts: []spec.VolumeMount{{Volume: "token", Path: "/run/secrets"}, {Volume: "out", Path: "/out"}}}},
	}}}
	instance := newInstance()
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, RuntimeDir: t.TempDir(), StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pid := runningPid(t, st.Supervisor(), "web", "app")
	root := filepath.Join("/proc", strconv.Itoa(pid), "root")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(root, "out/done")); err == nil {
			break
		}
	}
	if got := readIn(t, pid, "/out/got"); got != "s3cret" {
		t.Errorf("the process (uid 65534) read %q from its secret, want s3cret", got)
	}
	for p, want := range map[string]os.FileMode{"run/secrets/token": 0o440, "out": 0o777 | os.ModeDir | os.ModeSetgid} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want || int(fi.Sys().(*syscall.Stat_t).Gid) != gid {
			t.Errorf("/%s: mode %v gid %d, want %v gid %d", p, fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid, want, gid)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "out/got")); err != nil || int(fi.Sys().(*syscall.Stat_t).Gid) != gid {
		t.Errorf("/out/got is not the fs_group's: %v %v", fi, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, instance, pid)
}
