package logs

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// selfKB reads a "Name: N kB" field of /proc/self/smaps_rollup.
func selfKB(t testing.TB, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in smaps_rollup", field)
	return 0
}

// TestMemoryPerCapturedProcess measures what capture adds per process that
// wrote one line and then idles (S2's shape: N sleeps), against the same
// processes started with /dev/null output.
func TestMemoryPerCapturedProcess(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	measure := func(capture bool) (heap, pss int64) {
		h := newTestHub(t, HubOptions{Out: discardWriter{}})
		procs := make([]*proc.Process, 0, n)
		heap0, pss0 := heapInUse(), selfKB(t, "Pss")
		atts := make([]*Attachment, 0, n)
		for i := range n {
			c := &proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "echo ready; exec sleep 1000"}}
			var a *Attachment
			if capture { // what startCmd does, without its per-test Cleanup closure
				var err error
				if a, err = h.Attach("group", "process-"+strconv.Itoa(i), "1", spec.Log{}); err != nil {
					t.Fatal(err)
				}
				c.Stdout, c.Stderr = a.Stdout(), a.Stderr()
				atts = append(atts, a)
			}
			p, err := proc.Start(c)
			if a != nil {
				_ = a.CloseWriters() // fds of ours; cannot fail in a way that matters here
			}
			if err != nil {
				t.Fatal(err)
			}
			procs = append(procs, p)
		}
		if capture {
			eventually(t, "every process's line", func() bool {
				for i := range n {
					if l, _ := h.Tail("group", "process-"+strconv.Itoa(i), 1, false); len(l) != 1 {
						return false
					}
				}
				return true
			})
		}
		heap, pss = heapInUse()-heap0, selfKB(t, "Pss")-pss0
		for _, p := range procs {
			_ = p.Signal(syscall.SIGKILL) // ours, through its pidfd (sh exec-ed sleep)
			<-p.Done()
		}
		runtime.KeepAlive(atts)
		return heap, pss
	}
	baseHeap, basePSS := measure(false)
	heap, pss := measure(true)
	perHeap := float64(heap-baseHeap) / float64(n)
	perPSS := float64(pss-basePSS) * 1024 / float64(n)
	t.Logf("N=%d: heap %+d B without capture, %+d B with; capture costs %.0f B heap/process; PSS delta %+d kB vs %+d kB (%.0f B/process, page-granular)",
		n, baseHeap, heap, perHeap, basePSS, pss, perPSS)
	// Generous: the figure is a few hundred bytes; a preallocated tail
	// (256 KiB) or a goroutine per stream (>= 8 KiB) blows through this.
	if perHeap > 2048 {
		t.Errorf("capture costs %.0f B of heap per idle process; want < 2 KiB", perHeap)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
