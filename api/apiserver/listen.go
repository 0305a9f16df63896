package apiserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ErrAlreadyRunning is returned by Listen when another process answers on
// the socket.
var ErrAlreadyRunning = errors.New("another podsup is already listening on this socket")

// Listen creates the control socket at path: its directory if missing, the
// socket itself with mode 0600, or 0660 and group gid when gid >= 0. A stale
// socket file (nobody answering) is replaced; a live one is left alone.
func Listen(path string, gid int) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("unable to create the socket's directory: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrAlreadyRunning)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("unable to remove stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("unable to listen on %s: %w", path, err)
	}
	mode := os.FileMode(0o600)
	if gid >= 0 {
		mode = 0o660
		if err := os.Chown(path, -1, gid); err != nil {
			l.Close()
			return nil, fmt.Errorf("unable to give the socket to group %d: %w", gid, err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("unable to set the socket's mode: %w", err)
	}
	return l, nil
}
