package memtrim

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// residentFileKB is the resident size of this process's file-backed
// mappings of its own executable, from smaps.
func residentFileKB(t *testing.T) int {
	exe, _ := os.Readlink("/proc/self/exe")
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	kb, inExe := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			inExe = f[5] == exe && !strings.Contains(f[1], "w")
			continue
		}
		if inExe && len(f) >= 2 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	}
	return kb
}

func TestTrimExecutableReleasesResidentText(t *testing.T) {
	before := residentFileKB(t)
	if TrimExecutable() == 0 {
		t.Fatal("no executable mapping was advised")
	}
	after := residentFileKB(t)
	t.Logf("resident executable pages: %d KiB -> %d KiB", before, after)
	if after >= before {
		t.Fatalf("resident executable pages did not shrink: %d KiB -> %d KiB", before, after)
	}
}
