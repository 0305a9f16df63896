package rootless

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSubRangeIsTheUsersFirstLine: /etc/subuid names a user by name or by
// uid; the first of its lines is its range, malformed lines are skipped.
func TestSubRangeIsTheUsersFirstLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "subuid")
	src := "other:100000:65536\nalice:bad:1\nalice:200000:0\nalice:300000:65536\nalice:400000:65536\n1234:500000:1000\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		uid  int
		want Map
		ok   bool
	}{
		{"alice", 1000, Map{0, 300000, 65536}, true},
		{"bob", 1234, Map{0, 500000, 1000}, true},
		{"", 1234, Map{0, 500000, 1000}, true},
		{"carol", 1001, Map{}, false},
	} {
		got, ok := subRange(file, c.name, c.uid)
		if got != c.want || ok != c.ok {
			t.Errorf("subRange(%q, %d) = %v, %v; want %v, %v", c.name, c.uid, got, ok, c.want, c.ok)
		}
	}
	if _, ok := subRange(filepath.Join(t.TempDir(), "none"), "alice", 1000); ok {
		t.Error("a missing file gave a range")
	}
}

// TestMapsWithoutARangeAreTheUserAlone: with no range (or no helpers), root
// of the namespace is the user and its group, and podsup writes the maps
// itself.
func TestMapsWithoutARangeAreTheUserAlone(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	m := MapsFor(1000, 1001, none, none)
	if m.Helpers || len(m.UID) != 1 || len(m.GID) != 1 || m.UID[0] != (Map{0, 1000, 1}) || m.GID[0] != (Map{0, 1001, 1}) {
		t.Errorf("MapsFor without a range = %+v, want 0 1000 1 and 0 1001 1, no helpers", m)
	}
	if s := m.UID[0].String(); s != "0 1000 1" {
		t.Errorf("a map line is %q, want the kernel's \"0 1000 1\"", s)
	}
}
