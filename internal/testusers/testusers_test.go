package testusers

import (
	"strconv"
	"strings"
	"testing"
)

// TestUsersAreRealAndGone checks that a made user runs with its own uid
// and the groups it was given, as the security tests rely on.
func TestUsersAreRealAndGone(t *testing.T) {
	g := NewGroup(t)
	u := NewUser(t, g)
	if u.UID == 0 || u.GID == 0 || g.GID == 0 {
		t.Fatalf("made %+v in %+v: a zero id", u, g)
	}
	out, code := Run(t, u, []string{"PATH=/usr/bin:/bin"}, "id", "-u")
	if code != 0 || strings.TrimSpace(out) != strconv.Itoa(u.UID) {
		t.Fatalf("id -u as %s: %q, exit %d; want %d", u.Name, out, code, u.UID)
	}
	out, _ = Run(t, u, []string{"PATH=/usr/bin:/bin"}, "id", "-G")
	if !strings.Contains(" "+strings.TrimSpace(out)+" ", " "+strconv.Itoa(g.GID)+" ") {
		t.Fatalf("id -G as %s: %q, want group %d among them", u.Name, out, g.GID)
	}
}
