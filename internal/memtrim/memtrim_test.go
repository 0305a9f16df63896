package memtrim

import (
	"os"
	"strconv"
	"testing"

	"github.com/podsup/podsup/internal/rttest/testproc"
)

// residentFileKB is the resident size of this process's file-backed
// mappings of its own executable, from smaps.
func residentFileKB(t *testing.T) int {
	kb := 0
	read := testproc.ExecutableSmaps(os.Getpid(), func(f []string) {
		if len(f) >= 2 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	})
	if !read {
		t.Skip("no /proc/self/smaps")
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

// A trimmed executable faults a page at a time (MADV_RANDOM); made ready
// again, its faults map their neighbours and read ahead.
func TestReadyExecutableUndoesTheTrimsRandomAdvice(t *testing.T) {
	TrimExecutable()
	random, all := testproc.RandomReadMappings(os.Getpid())
	if all == 0 || random != all {
		t.Fatalf("after TrimExecutable %d of %d executable mappings advised MADV_RANDOM, want all", random, all)
	}
	if ReadyExecutable() == 0 {
		t.Fatal("no executable mapping was advised")
	}
	if random, all = testproc.RandomReadMappings(os.Getpid()); random != 0 {
		t.Fatalf("after ReadyExecutable %d of %d executable mappings still advised MADV_RANDOM", random, all)
	}
}
