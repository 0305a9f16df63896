package apiserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsup/podsup/api"
)

func TestPolicyTrustsRootOwnerAndGroupOnly(t *testing.T) {
	pol := Policy{OwnerUID: 1000, GroupID: -1}
	cases := []struct {
		peer Peer
		want bool
	}{
		{Peer{UID: 0, GID: 0}, true},
		{Peer{UID: 1000, GID: 1000}, true},
		{Peer{UID: 1001, GID: 1001}, false},
	}
	for _, c := range cases {
		if got := pol.Allows(c.peer); got != c.want {
			t.Errorf("Allows(%v) = %v, want %v", c.peer, got, c.want)
		}
	}
	// With a socket group: its primary members, and members by their
	// supplementary groups as the kernel has them (read from /proc).
	pol.GroupID = 4242
	if !pol.Allows(Peer{UID: 1001, GID: 4242}) {
		t.Error("a peer whose primary group is the socket group was refused")
	}
	self := Peer{PID: os.Getpid(), UID: 1001, GID: 1001}
	groups := supplementaryGroups(os.Getpid())
	if len(groups) > 0 {
		pol.GroupID = groups[0]
		if !pol.Allows(self) {
			t.Errorf("a peer with supplementary group %d was refused", groups[0])
		}
	}
	pol.GroupID = 4243
	if pol.Allows(Peer{PID: os.Getpid(), UID: 1001, GID: 1001}) && !contains(groups, 4243) {
		t.Error("a peer outside the socket group was allowed")
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestErrorClassesMapToStatusCodes(t *testing.T) {
	for err, want := range map[error]int{
		notFound("no group %q", "x"):      http.StatusNotFound,
		badRequest("bad"):                 http.StatusBadRequest,
		&wrapped{"busy", api.ErrConflict}: http.StatusConflict,
		errors.New("other"):               http.StatusInternalServerError,
	} {
		if got := statusOf(err); got != want {
			t.Errorf("statusOf(%v) = %d, want %d", err, got, want)
		}
	}
}

func TestListenRefusesALiveSocketAndReplacesAStaleOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "podsup.sock")
	l, err := Listen(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := Listen(path, -1); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Listen on a live socket: %v, want ErrAlreadyRunning", err)
	}
	l.Close()
	// A socket file nobody answers on (a podsup that was SIGKILLed).
	os.Remove(path)
	ua, _ := net.ResolveUnixAddr("unix", path)
	stale, _ := net.ListenUnix("unix", ua)
	stale.SetUnlinkOnClose(false)
	stale.Close()
	l2, err := Listen(path, -1)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()
	// A client names the socket when nothing listens.
	_, err = api.NewClient(path).Version(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("client error %v does not name the socket", err)
	}
}
