package systemd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeManager plays systemd's end of NOTIFY_SOCKET: a unixgram socket
// whose datagrams arrive on msgs.
type fakeManager struct {
	path string
	conn *net.UnixConn
	msgs chan string
}

func newFakeManager(t *testing.T) *fakeManager {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeManager{path: path, conn: conn, msgs: make(chan string, 1024)}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(m.msgs)
				return
			}
			m.msgs <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return m
}

// next returns the next datagram, failing after a generous wait.
func (m *fakeManager) next(t *testing.T) string {
	t.Helper()
	select {
	case s, ok := <-m.msgs:
		if !ok {
			t.Fatal("notify socket closed")
		}
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no notify message within 10s")
		return ""
	}
}

// none asserts that no datagram arrives for d.
func (m *fakeManager) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case s := <-m.msgs:
		t.Fatalf("unexpected notify message %q", s)
	case <-time.After(d):
	}
}

func TestNotifierSendsDatagrams(t *testing.T) {
	m := newFakeManager(t)
	n := NewNotifier(m.path)
	if !n.Enabled() {
		t.Fatal("a notifier with a path is disabled")
	}
	if err := n.Send("READY=1", "STATUS=ok"); err != nil {
		t.Fatal(err)
	}
	if got := m.next(t); got != "READY=1\nSTATUS=ok" {
		t.Fatalf("datagram %q", got)
	}
	_ = n.Close()
	var off *Notifier
	if off.Enabled() || NewNotifier("").Enabled() {
		t.Fatal("nil or pathless notifier enabled")
	}
	if err := off.Send("READY=1"); err != nil {
		t.Fatalf("disabled notifier: %v", err)
	}
}

func TestNotifierAbstractSocket(t *testing.T) {
	name := "podsup-test-" + strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000000000")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "\x00" + name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := NewNotifier("@" + name).Send("STOPPING=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "STOPPING=1" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}

// NotifierFromEnv takes the variables out of the environment, so the
// processes podsup starts do not inherit them.
func TestNotifierFromEnvUnsets(t *testing.T) {
	m := newFakeManager(t)
	t.Setenv("NOTIFY_SOCKET", m.path)
	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", "")
	n, wd, err := NotifierFromEnv()
	if err != nil || !n.Enabled() || wd != 3*time.Second {
		t.Fatalf("NotifierFromEnv: %v %v %v", n.Enabled(), wd, err)
	}
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		if _, set := os.LookupEnv(v); set {
			t.Errorf("%s still set", v)
		}
	}
}
