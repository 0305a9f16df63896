package systemd

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier writes sd_notify datagrams to the service manager. A nil or
// disabled Notifier sends nothing. Safe for concurrent use.
type Notifier struct {
	addr *net.UnixAddr // nil: not under a service manager

	mu   sync.Mutex // serialises writes, so messages keep their order
	conn *net.UnixConn
}

// NotifierFromEnv takes NOTIFY_SOCKET and the watchdog variables out of the
// environment (so supervised processes do not inherit them) and returns a
// Notifier for that socket with the watchdog interval (0 when systemd
// asked for none, or for another pid's).
func NotifierFromEnv() (*Notifier, time.Duration, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	_ = os.Unsetenv("NOTIFY_SOCKET") // cannot fail on unix
	watchdog, err := daemon.SdWatchdogEnabled(true)
	if err != nil {
		return NewNotifier(path), 0, fmt.Errorf("unable to read the watchdog interval: %w", err)
	}
	return NewNotifier(path), watchdog, nil
}

// NewNotifier returns a Notifier for the socket path (an "@" prefix names an
// abstract socket, as in NOTIFY_SOCKET); "" gives a disabled one.
func NewNotifier(path string) *Notifier {
	if path == "" {
		return &Notifier{}
	}
	name := path
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	return &Notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}}
}

// Enabled reports whether there is a service manager to tell.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Send writes one datagram of KEY=VALUE lines.
func (n *Notifier) Send(lines ...string) error {
	if !n.Enabled() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn == nil {
		conn, err := net.DialUnix("unixgram", nil, n.addr)
		if err != nil {
			return fmt.Errorf("unable to reach the service manager's notify socket: %w", err)
		}
		n.conn = conn
	}
	if _, err := n.conn.Write([]byte(strings.Join(lines, "\n"))); err != nil {
		// The manager may have gone and come back (a daemon-reexec):
		// dial again next time.
		_ = n.conn.Close()
		n.conn = nil
		return fmt.Errorf("unable to notify the service manager: %w", err)
	}
	return nil
}

// Close releases the socket.
func (n *Notifier) Close() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn != nil {
		err := n.conn.Close()
		n.conn = nil
		return err
	}
	return nil
}
