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

// BenchmarkMemoryPerCapturedProcess measures what capture adds per process
// that wrote one line and then idles (S2's shape: N sleeps), against the
// same processes started with /dev/null output: heap-B/process (live heap
// after a full collection) and pss-B/process (page-granular). N is 1000;
// each iteration measures anew, so -benchtime 1x is the figure once:
//
//	go test -run '^$' -bench MemoryPerCapturedProcess -benchtime 1x ./logs
func BenchmarkMemoryPerCapturedProcess(b *testing.B) {
	const n = 1000
	var heap, pss float64
	for range b.N {
		h, p := captureCostPerProcess(b, n)
		heap += h
		pss += p
	}
	b.ReportMetric(heap/float64(b.N), "heap-B/process")
	b.ReportMetric(pss/float64(b.N), "pss-B/process")
}

// TestCaptureHeapPerProcessStaysSmall is the regression guard of the
// figure above, on 100 processes: a few hundred bytes each; a preallocated
// tail (256 KiB) or a goroutine per stream (8 KiB or more) blows through
// the generous 2 KiB bound.
func TestCaptureHeapPerProcessStaysSmall(t *testing.T) {
	// Not parallel: it measures the heap, which belongs to the whole test process.
	const n = 100
	perHeap, perPSS := captureCostPerProcess(t, n)
	t.Logf("N=%d: capture costs %.0f B heap/process, %.0f B PSS/process (page-granular)", n, perHeap, perPSS)
	if perHeap > 2048 {
		t.Errorf("capture costs %.0f B of heap per idle process; want < 2 KiB", perHeap)
	}
}

// captureCostPerProcess starts n processes that each write a line and
// idle, without capture and then with it, and returns what capture adds per
// process: live heap, and PSS in bytes.
func captureCostPerProcess(tb testing.TB, n int) (perHeap, perPSS float64) {
	tb.Helper()
	baseHeap, basePSS := measureProcesses(tb, n, false)
	heap, pss := measureProcesses(tb, n, true)
	return float64(heap-baseHeap) / float64(n), float64(pss-basePSS) * 1024 / float64(n)
}

// measureProcesses is the heap (bytes) and PSS (kB) that n running
// processes add, with their output captured or not; it kills them after.
func measureProcesses(tb testing.TB, n int, capture bool) (heap, pss int64) {
	tb.Helper()
	h := newTestHub(tb, HubOptions{Out: discardWriter{}})
	procs := make([]*proc.Process, 0, n)
	heap0, pss0 := heapInUse(), selfKB(tb, "Pss")
	atts := make([]*Attachment, 0, n)
	for i := range n {
		c := &proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "echo ready; exec sleep 1000"}}
		var a *Attachment
		if capture { // what startCmd does, without its per-test Cleanup closure
			var err error
			if a, err = h.Attach("group", "process-"+strconv.Itoa(i), "1", spec.Log{}); err != nil {
				tb.Fatal(err)
			}
			c.Stdout, c.Stderr = a.Stdout(), a.Stderr()
			atts = append(atts, a)
		}
		p, err := proc.Start(c)
		if a != nil {
			_ = a.CloseWriters() // fds of ours; cannot fail in a way that matters here
		}
		if err != nil {
			tb.Fatal(err)
		}
		procs = append(procs, p)
	}
	if capture {
		eventually(tb, "every process's line", func() bool {
			for i := range n {
				if l, _ := h.Tail("group", "process-"+strconv.Itoa(i), 1, false); len(l) != 1 {
					return false
				}
			}
			return true
		})
	}
	heap, pss = heapInUse()-heap0, selfKB(tb, "Pss")-pss0
	for _, p := range procs {
		_ = p.Signal(syscall.SIGKILL) // ours, through its pidfd (sh exec-ed sleep)
		<-p.Done()
	}
	runtime.KeepAlive(atts)
	return heap, pss
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
