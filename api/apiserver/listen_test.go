package apiserver

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/testusers"
)

// TestListenReplacesOnlyAStaleSocket: at the socket's path, only a socket
// nobody answers on is replaced (issue 25, item 11). A regular file, a
// directory, a symbolic link or a FIFO there is refused with an error
// naming it, and left as it was; a live socket is ErrAlreadyRunning.
func TestListenReplacesOnlyAStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "podsup.sock")
	kinds := map[string]func() error{
		"a regular file": func() error { return os.WriteFile(path, []byte("important"), 0o644) },
		"a directory":    func() error { return os.Mkdir(path, 0o755) },
		"a symbolic link": func() error {
			return os.Symlink(filepath.Join(dir, "target"), path)
		},
		"a FIFO": func() error { return unix.Mkfifo(path, 0o644) },
	}
	for kind, mk := range kinds {
		t.Run(kind, func(t *testing.T) {
			if err := mk(); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(path)
			var before unix.Stat_t
			if err := unix.Lstat(path, &before); err != nil {
				t.Fatal(err)
			}
			l, err := Listen(path, -1)
			if err == nil {
				l.Close()
				l.RemoveSocket()
				t.Fatalf("Listen took the path holding %s", kind)
			}
			if want := kind + " is there, not a stale socket"; !strings.Contains(err.Error(), want) {
				t.Fatalf("Listen over %s: %q, want it to say %q", kind, err, want)
			}
			var after unix.Stat_t
			if err := unix.Lstat(path, &after); err != nil || after.Ino != before.Ino {
				t.Fatalf("%s at the socket's path was removed or replaced (%v)", kind, err)
			}
		})
	}
	t.Run("a stale socket", func(t *testing.T) {
		old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		old.SetUnlinkOnClose(false)
		old.Close() // the file stays, nobody answers: stale
		l, err := Listen(path, -1)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		defer l.RemoveSocket()
		defer l.Close()
		if _, err := Listen(path, -1); !errors.Is(err, ErrAlreadyRunning) {
			t.Fatalf("Listen over a live socket: %v, want ErrAlreadyRunning", err)
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("the live socket stopped answering after a second Listen: %v", err)
		}
		c.Close()
	})
}

// TestListenRefusesAnUnsafeDirectory: the socket's directory must be a
// real directory, owned by podsup's user or root, and writable by nobody
// else (issue 25, item 2): its owner, or anyone who can write it, could
// replace the socket. One made by Listen is 0755 for root.
func TestListenRefusesAnUnsafeDirectory(t *testing.T) {
	testusers.RequireRoot(t)
	attacker := testusers.NewUser(t)
	base := t.TempDir()
	cases := []struct {
		name, want string
		mk         func(dir string) error
	}{
		{"owned by another user", "belongs to uid", func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chown(dir, attacker.UID, attacker.GID)
		}},
		{"world-writable", "writable by others", func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chmod(dir, 0o777)
		}},
		{"group-writable", "writable by others", func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chmod(dir, 0o770)
		}},
		{"a symbolic link", "is a symbolic link", func(dir string) error {
			real := dir + ".real"
			if err := os.Mkdir(real, 0o700); err != nil {
				return err
			}
			return os.Symlink(real, dir)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(c.name, " ", "-"))
			if err := c.mk(dir); err != nil {
				t.Fatal(err)
			}
			l, err := Listen(filepath.Join(dir, "podsup.sock"), -1)
			if err == nil {
				l.Close()
				l.RemoveSocket()
				t.Fatalf("Listen accepted a socket directory %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Listen in a directory %s: %q, want it to say %q", c.name, err, c.want)
			}
			if _, err := os.Lstat(filepath.Join(dir, "podsup.sock")); !os.IsNotExist(err) {
				t.Fatalf("a socket was made in the refused directory (%v)", err)
			}
		})
	}
	t.Run("made by Listen", func(t *testing.T) {
		old := syscall.Umask(0o077) // the mode must not depend on it
		defer syscall.Umask(old)
		dir := filepath.Join(base, "new", "run")
		group := testusers.NewGroup(t)
		l, err := Listen(filepath.Join(dir, "podsup.sock"), group.GID)
		if err != nil {
			t.Fatal(err)
		}
		var sock unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, "podsup.sock"), &sock); err != nil || sock.Mode&unix.S_IFMT != unix.S_IFSOCK ||
			sock.Mode&0o7777 != 0o660 || int(sock.Gid) != group.GID {
			t.Errorf("the socket: mode %o gid %d (%v), want a socket 0660 of group %d", sock.Mode, sock.Gid, err, group.GID)
		}
		l.Close()
		l.RemoveSocket()
		if _, err := os.Lstat(filepath.Join(dir, "podsup.sock")); !os.IsNotExist(err) {
			t.Errorf("RemoveSocket left the socket it bound (%v)", err)
		}
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm() != 0o755 {
			t.Fatalf("the directory Listen made: %v %v, want mode 0755 for root", st.Mode(), err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".podsup-bind-*")); len(left) > 0 {
			t.Fatalf("Listen left its private directory: %q", left)
		}
	})
}

// TestListenSocketOwnershipFollowsNoLink is the race of issue 25, item
// 10: the moment the socket appears at its path, a racer swaps it for a
// symbolic link to a root-owned file. Whatever the timing, the socket's
// chown and chmod must never reach that file.
func TestListenSocketOwnershipFollowsNoLink(t *testing.T) {
	testusers.RequireRoot(t)
	group := testusers.NewGroup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "podsup.sock")
	target := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(target, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var want unix.Stat_t
	if err := unix.Stat(target, &want); err != nil {
		t.Fatal(err)
	}

	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(in, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(in)
		t.Fatal(err)
	}
	// The racer keeps a link ready and renames it over the socket the
	// instant its name appears: one syscall, as fast as an attacker gets.
	link := filepath.Join(t.TempDir(), "link") // out of the watched directory

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	swaps := 0
	go func() {
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			_ = os.Remove(link)
			_ = os.Symlink(target, link)
			n, err := unix.Read(in, buf)
			if err != nil || n <= 0 {
				return // closed: the test is over
			}
			select {
			case <-stop:
				return
			default:
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if name == "podsup.sock" {
					if os.Rename(link, path) == nil {
						swaps++
					}
					break
				}
			}
		}
	}()

	stopRacer := func() {
		close(stop)
		// Wake the racer from its read with an event, then close its fd.
		_ = os.WriteFile(filepath.Join(dir, "wake"), nil, 0o600)
		wg.Wait()
		unix.Close(in)
	}
	const tries = 200
	for try := 0; try < tries; try++ {
		l, err := Listen(path, group.GID)
		if err == nil {
			l.Close()
			l.RemoveSocket()
		}
		_ = os.Remove(path) // the racer's link, if it won
		var got unix.Stat_t
		if err := unix.Stat(target, &got); err != nil {
			t.Fatal(err)
		}
		if got.Uid != want.Uid || got.Gid != want.Gid || got.Mode != want.Mode {
			stopRacer()
			t.Fatalf("try %d: the racer's link made the socket's chown/chmod reach %s: uid %d gid %d mode %o, was uid %d gid %d mode %o",
				try, target, got.Uid, got.Gid, got.Mode&0o7777, want.Uid, want.Gid, want.Mode&0o7777)
		}
	}
	stopRacer()
	t.Logf("%d tries, the racer swapped the socket %d times", tries, swaps)
	if swaps == 0 {
		t.Fatal("the racer never swapped the socket: the test tested nothing")
	}
}
