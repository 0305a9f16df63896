package stack_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// TestHeapPerProcessStaysSmall is the regression guard of what the whole
// stack keeps per running process (S2's shape: idle sleeps in groups of
// ten, output captured): live heap after a collection, about 5 KiB per
// process when it was written. The bound is twice that, so that only a
// real regression fails it: state kept per instance and never dropped, a
// buffer sized for the worst case, a slice grown by append and kept.
//
//	go test -run '^$' -bench HeapPerProcess -benchtime 1x ./stack
//
// measures the same at 1000 processes (docs/benchmarks.md).
func TestHeapPerProcessStaysSmall(t *testing.T) {
	// Not parallel: it measures the heap, which the whole test binary shares.
	per := heapPerProcess(t, 200)
	t.Logf("N=200: %.0f B of live heap per process", per)
	if per > 10<<10 {
		t.Errorf("the stack keeps %.0f B of heap per idle process; want < 10 KiB", per)
	}
}

func BenchmarkHeapPerProcess(b *testing.B) {
	var sum float64
	for range b.N {
		sum += heapPerProcess(b, 1000)
	}
	b.ReportMetric(sum/float64(b.N), "heap-B/process")
}

// heapPerProcess starts a stack of n `sleep 1000` in groups of ten, waits
// until every one runs, and returns the live heap it added per process;
// the stack is shut down before it returns.
func heapPerProcess(tb testing.TB, n int) float64 {
	tb.Helper()
	var cfg spec.Config
	for i := range n {
		if i%10 == 0 {
			cfg.Groups = append(cfg.Groups, spec.Group{Name: fmt.Sprintf("g%d", i/10)})
		}
		g := &cfg.Groups[len(cfg.Groups)-1]
		g.Processes = append(g.Processes, spec.Process{Name: fmt.Sprintf("p%d", i%10), Command: []string{"sleep", "1000"}})
	}
	instance := newInstance()
	before := liveHeap()
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, RuntimeDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	pids := allRunning(tb, st, n)
	per := float64(int64(liveHeap())-int64(before)) / float64(n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		tb.Fatal(err)
	}
	if t, ok := tb.(*testing.T); ok {
		assertNothingLeft(t, instance, pids...)
	}
	return per
}

// allRunning waits until n processes of st run, and returns their pids.
func allRunning(tb testing.TB, st *stack.Stack, n int) []int {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var pids []int
		for _, g := range st.Supervisor().Status().Groups {
			for _, p := range g.Processes {
				if p.State == lifecycle.StateRunning && p.Pid > 0 {
					pids = append(pids, p.Pid)
				}
			}
		}
		if len(pids) == n {
			return pids
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d processes running after two minutes", len(pids), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
