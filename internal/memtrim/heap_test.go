package memtrim

import (
	"runtime"
	"testing"
)

var sink [][]byte

// TestReturnHeapAfterABurst: 256 MiB allocated and dropped are given back
// to the kernel at once, and a small piece of work pays no GC.
func TestReturnHeapAfterABurst(t *testing.T) {
	before := HeapAllocated()
	if ReturnHeapAfter(before, 64<<20) {
		t.Fatal("ReturnHeapAfter collected after no work")
	}
	for range 256 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	if !ReturnHeapAfter(before, 64<<20) {
		t.Fatal("ReturnHeapAfter did not collect after 256 MiB")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if held := ms.HeapSys - ms.HeapReleased; held > 128<<20 {
		t.Errorf("the heap still holds %d MiB from the kernel", held>>20)
	}
}
