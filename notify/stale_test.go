package notify

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestNewServerRemovesOnlyDeadServersDirectories: beside the control
// socket, a new Server removes the notify directory a dead podsup left
// (issue 25, item 9), and nothing else: not a live Server's, not a
// symbolic link named like one (nor what it points to), not a
// directory of another name.
func TestNewServerRemovesOnlyDeadServersDirectories(t *testing.T) {
	dir := t.TempDir()
	// What a SIGKILLed podsup leaves: its directory with a socket in it,
	// and nobody holding its lock.
	dead := filepath.Join(dir, "notify-1234")
	if err := os.Mkdir(dead, 0o711); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dead, "1.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	// A link named like one, to a directory that must keep its file.
	elsewhere := t.TempDir()
	keep := filepath.Join(elsewhere, "keep")
	if err := os.WriteFile(keep, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "notify-5678")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notify-x")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	live, _ := startServer(t, Options{Dir: dir})
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead podsup's %s is still there (%v)", dead, err)
	}
	second, _ := startServer(t, Options{Dir: dir})
	for _, p := range []string{live.Dir(), second.Dir(), link, keep, other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
}
