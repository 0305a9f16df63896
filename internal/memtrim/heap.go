package memtrim

import (
	"runtime/debug"
	"runtime/metrics"
)

// HeapAllocated is how many bytes the Go heap has allocated since the
// process started: read it before a piece of work, and ReturnHeapAfter
// tells how much the work allocated. It does not stop the world.
func HeapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// ReturnHeapAfter gives the heap's free pages back to the kernel when the
// work since before (a HeapAllocated reading) allocated more than
// threshold bytes, and reports whether it did. The Go runtime returns
// free heap memory only gradually (the scavenger keeps what the last GC
// cycles may want again): after a one-off burst such as the reload of a
// large configuration, a supervisor that is otherwise idle would hold
// hundreds of MB it will not use. debug.FreeOSMemory collects and returns
// them at once; it costs a GC cycle, so small work does not pay it.
func ReturnHeapAfter(before, threshold uint64) bool {
	if HeapAllocated()-before <= threshold {
		return false
	}
	debug.FreeOSMemory()
	return true
}
