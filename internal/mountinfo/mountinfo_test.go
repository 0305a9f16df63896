package mountinfo

import (
	"slices"
	"strings"
	"testing"
)

func TestParseReadsFieldsAndSkipsWhatItCannot(t *testing.T) {
	in := "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n" +
		"not a mount line\n" +
		`41 31 0:38 / /mnt/my\040cgroup rw shared:5 - cgroup2 cgroup2 rw,nsdelegate` + "\n"
	got, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d mounts, want 2: %+v", len(got), got)
	}
	if m := got[0]; m.ID != 36 || m.Root != "/mnt1" || m.MountPoint != "/mnt2" || m.FSType != "ext3" || !slices.Equal(m.SuperOptions, []string{"rw", "errors=continue"}) {
		t.Errorf("first: %+v", m)
	}
	if m := got[1]; m.MountPoint != "/mnt/my cgroup" || m.FSType != "cgroup2" {
		t.Errorf("second: %+v", m)
	}
}

func TestUnescapeLeavesWhatIsNoEscape(t *testing.T) {
	for in, want := range map[string]string{`a\040b`: "a b", `a\\b`: `a\\b`, `tail\04`: `tail\04`, "plain": "plain"} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
