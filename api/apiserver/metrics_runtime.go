package apiserver

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// podsup's own process_* and go_* families, with the names, help and
// figures every Go exporter gives them (client_golang's process and Go
// collectors, whose defaults podsup served before it wrote the format
// itself): read from /proc/self, getrlimit and runtime/metrics on each
// scrape.

// runtimeSamples are the runtime/metrics a scrape reads, in the order of
// the rt* indexes.
var runtimeSamples = []string{
	"/gc/heap/tiny/allocs:objects",
	"/gc/heap/allocs:objects",
	"/gc/heap/frees:objects",
	"/gc/heap/allocs:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/objects:objects",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/other:bytes",
	"/gc/heap/goal:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/sched/gomaxprocs:threads",
}

const (
	rtTinyAllocs = iota
	rtAllocObjects
	rtFreeObjects
	rtAllocBytes
	rtTotal
	rtHeapObjectsBytes
	rtHeapUnused
	rtHeapReleased
	rtHeapFree
	rtHeapObjects
	rtStacks
	rtOSStacks
	rtMSpanInuse
	rtMSpanFree
	rtMCacheInuse
	rtMCacheFree
	rtProfBuckets
	rtMetadataOther
	rtOther
	rtHeapGoal
	rtGOGC
	rtMemLimit
	rtGOMAXPROCS
	rtCount
)

// runtimeFigures is what a scrape read of the Go runtime.
type runtimeFigures struct {
	v          [rtCount]float64
	goroutines int
	threads    int
	gc         debug.GCStats
}

func readRuntime() *runtimeFigures {
	f := &runtimeFigures{}
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		samples[i].Name = name
	}
	metrics.Read(samples)
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			f.v[i] = float64(s.Value.Uint64())
		}
	}
	f.goroutines = runtime.NumGoroutine()
	f.threads, _ = runtime.ThreadCreateProfile(nil)
	f.gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&f.gc)
	return f
}

// selfFigures is what a scrape read of podsup's own process.
type selfFigures struct {
	statOK                 bool
	cpuSeconds, vsize, rss float64
	fds                    int
	fdsOK                  bool
	maxFDs, maxVsize       float64
	limitsOK               bool
	received, sent         float64
	netOK                  bool
}

// userHZ is the unit of /proc/PID/stat's times: USER_HZ is 100 on every
// architecture Linux has today.
const userHZ = 100

func readOwnProcess() selfFigures {
	var f selfFigures
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			// Fields from the 3rd (state) on: utime is the 14th, stime
			// the 15th, vsize the 23rd, rss the 24th.
			fields := bytes.Fields(b[i+1:])
			if len(fields) > 21 {
				ut, _ := strconv.ParseUint(string(fields[11]), 10, 64)
				st, _ := strconv.ParseUint(string(fields[12]), 10, 64)
				vs, _ := strconv.ParseUint(string(fields[20]), 10, 64)
				rss, _ := strconv.ParseInt(string(fields[21]), 10, 64)
				f.cpuSeconds = float64(ut+st) / userHZ
				f.vsize = float64(vs)
				f.rss = float64(rss * int64(os.Getpagesize()))
				f.statOK = true
			}
		}
	}
	f.fds, f.fdsOK = openFDs()
	var nofile, as syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) == nil && syscall.Getrlimit(syscall.RLIMIT_AS, &as) == nil {
		f.maxFDs, f.maxVsize, f.limitsOK = float64(nofile.Cur), float64(as.Cur), true
	}
	f.received, f.sent, f.netOK = netOctets()
	return f
}

// openFDs counts podsup's open descriptors: the size of /proc/self/fd
// where the kernel gives it (Linux 6.2 on), else its entries.
func openFDs() (int, bool) {
	if fi, err := os.Stat("/proc/self/fd"); err == nil && fi.Size() > 0 {
		return int(fi.Size()), true
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err != nil || len(names) == 0 {
			return n, true
		}
	}
}

// netOctets is the IpExt InOctets and OutOctets of podsup's network
// namespace (/proc/self/net/netstat).
func netOctets() (in, out float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	var names [][]byte
	for line := range bytes.Lines(b) {
		rest, found := bytes.CutPrefix(line, []byte("IpExt:"))
		if !found {
			continue
		}
		fields := bytes.Fields(rest)
		if names == nil {
			names = fields
			continue
		}
		for i, name := range names {
			if i >= len(fields) {
				break
			}
			v, _ := strconv.ParseFloat(string(fields[i]), 64)
			switch string(name) {
			case "InOctets":
				in = v
			case "OutOctets":
				out = v
			}
		}
		return in, out, true
	}
	return 0, 0, false
}

// startTime is when podsup started, in Unix seconds: the boot time
// (/proc/stat btime) plus /proc/self/stat's starttime.
var startTime = sync.OnceValues(func() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	var btime float64
	found := false
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			btime, err = strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			found = err == nil
			break
		}
	}
	s, err := os.ReadFile("/proc/self/stat")
	if !found || err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(s[i+1:])
	if len(fields) <= 19 {
		return 0, false
	}
	ticks, err := strconv.ParseUint(string(fields[19]), 10, 64) // the 22nd field
	if err != nil {
		return 0, false
	}
	return btime + float64(ticks)/userHZ, true
})

// runtimeFamilies are the process_* and go_* families.
var runtimeFamilies = []familyWriter{
	selfGauge("process_cpu_seconds_total", counterType, "Total user and system CPU time spent in seconds.",
		func(f *selfFigures) (float64, bool) { return f.cpuSeconds, f.statOK }),
	selfGauge("process_max_fds", gaugeType, "Maximum number of open file descriptors.",
		func(f *selfFigures) (float64, bool) { return f.maxFDs, f.limitsOK }),
	selfGauge("process_network_receive_bytes_total", counterType, "Number of bytes received by the process over the network.",
		func(f *selfFigures) (float64, bool) { return f.received, f.netOK }),
	selfGauge("process_network_transmit_bytes_total", counterType, "Number of bytes sent by the process over the network.",
		func(f *selfFigures) (float64, bool) { return f.sent, f.netOK }),
	selfGauge("process_open_fds", gaugeType, "Number of open file descriptors.",
		func(f *selfFigures) (float64, bool) { return float64(f.fds), f.fdsOK }),
	selfGauge("process_resident_memory_bytes", gaugeType, "Resident memory size in bytes.",
		func(f *selfFigures) (float64, bool) { return f.rss, f.statOK }),
	selfGauge("process_start_time_seconds", gaugeType, "Start time of the process since unix epoch in seconds.",
		func(*selfFigures) (float64, bool) { return startTime() }),
	selfGauge("process_virtual_memory_bytes", gaugeType, "Virtual memory size in bytes.",
		func(f *selfFigures) (float64, bool) { return f.vsize, f.statOK }),
	selfGauge("process_virtual_memory_max_bytes", gaugeType, "Maximum amount of virtual memory available in bytes.",
		func(f *selfFigures) (float64, bool) { return f.maxVsize, f.limitsOK }),

	{family{"go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", summaryType},
		func(e *expoWriter, s *scrape) {
			gc := &s.runtime().gc
			for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
				e.sample("")
				e.label("quantile", q)
				e.value(gc.PauseQuantiles[i].Seconds())
			}
			e.sample("_sum")
			e.value(gc.PauseTotal.Seconds())
			e.sample("_count")
			e.count(uint64(gc.NumGC))
		}},
	rtGauge("go_gc_gogc_percent", gaugeType, "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.",
		func(v *[rtCount]float64) float64 { return v[rtGOGC] }),
	rtGauge("go_gc_gomemlimit_bytes", gaugeType, "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtMemLimit] }),
	{family{"go_goroutines", "Number of goroutines that currently exist.", gaugeType},
		func(e *expoWriter, s *scrape) { e.sample(""); e.value(float64(s.runtime().goroutines)) }},
	{family{"go_info", "Information about the Go environment.", gaugeType},
		func(e *expoWriter, s *scrape) { e.sample(""); e.label("version", runtime.Version()); e.value(1) }},
	rtGauge("go_memstats_alloc_bytes", gaugeType, "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtHeapObjectsBytes] }),
	rtGauge("go_memstats_alloc_bytes_total", counterType, "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtAllocBytes] }),
	rtGauge("go_memstats_buck_hash_sys_bytes", gaugeType, "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtProfBuckets] }),
	rtGauge("go_memstats_frees_total", counterType, "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.",
		func(v *[rtCount]float64) float64 { return v[rtFreeObjects] + v[rtTinyAllocs] }),
	rtGauge("go_memstats_gc_sys_bytes", gaugeType, "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtMetadataOther] }),
	rtGauge("go_memstats_heap_alloc_bytes", gaugeType, "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtHeapObjectsBytes] }),
	rtGauge("go_memstats_heap_idle_bytes", gaugeType, "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtHeapReleased] + v[rtHeapFree] }),
	rtGauge("go_memstats_heap_inuse_bytes", gaugeType, "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes",
		func(v *[rtCount]float64) float64 { return v[rtHeapObjectsBytes] + v[rtHeapUnused] }),
	rtGauge("go_memstats_heap_objects", gaugeType, "Number of currently allocated objects. Equals to /gc/heap/objects:objects.",
		func(v *[rtCount]float64) float64 { return v[rtHeapObjects] }),
	rtGauge("go_memstats_heap_released_bytes", gaugeType, "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtHeapReleased] }),
	rtGauge("go_memstats_heap_sys_bytes", gaugeType, "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.",
		func(v *[rtCount]float64) float64 {
			return v[rtHeapObjectsBytes] + v[rtHeapUnused] + v[rtHeapReleased] + v[rtHeapFree]
		}),
	{family{"go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", gaugeType},
		func(e *expoWriter, s *scrape) {
			e.sample("")
			e.value(float64(s.runtime().gc.LastGC.UnixNano()) / 1e9)
		}},
	rtGauge("go_memstats_mallocs_total", counterType, "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.",
		func(v *[rtCount]float64) float64 { return v[rtAllocObjects] + v[rtTinyAllocs] }),
	rtGauge("go_memstats_mcache_inuse_bytes", gaugeType, "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtMCacheInuse] }),
	rtGauge("go_memstats_mcache_sys_bytes", gaugeType, "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtMCacheInuse] + v[rtMCacheFree] }),
	rtGauge("go_memstats_mspan_inuse_bytes", gaugeType, "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtMSpanInuse] }),
	rtGauge("go_memstats_mspan_sys_bytes", gaugeType, "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtMSpanInuse] + v[rtMSpanFree] }),
	rtGauge("go_memstats_next_gc_bytes", gaugeType, "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtHeapGoal] }),
	rtGauge("go_memstats_other_sys_bytes", gaugeType, "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtOther] }),
	rtGauge("go_memstats_stack_inuse_bytes", gaugeType, "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtStacks] }),
	rtGauge("go_memstats_stack_sys_bytes", gaugeType, "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.",
		func(v *[rtCount]float64) float64 { return v[rtStacks] + v[rtOSStacks] }),
	rtGauge("go_memstats_sys_bytes", gaugeType, "Number of bytes obtained from system. Equals to /memory/classes/total:byte.",
		func(v *[rtCount]float64) float64 { return v[rtTotal] }),
	rtGauge("go_sched_gomaxprocs_threads", gaugeType, "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.",
		func(v *[rtCount]float64) float64 { return v[rtGOMAXPROCS] }),
	{family{"go_threads", "Number of OS threads created.", gaugeType},
		func(e *expoWriter, s *scrape) { e.sample(""); e.value(float64(s.runtime().threads)) }},
}

// selfGauge is a family of one unlabelled sample of podsup's process, left
// out when it could not be read.
func selfGauge(name string, typ metricType, help string, get func(*selfFigures) (float64, bool)) familyWriter {
	return familyWriter{family{name, help, typ}, func(e *expoWriter, s *scrape) {
		if v, ok := get(s.self()); ok {
			e.sample("")
			e.value(v)
		}
	}}
}

// rtGauge is a family of one unlabelled sample of the Go runtime.
func rtGauge(name string, typ metricType, help string, get func(*[rtCount]float64) float64) familyWriter {
	return familyWriter{family{name, help, typ}, func(e *expoWriter, s *scrape) {
		e.sample("")
		e.value(get(&s.runtime().v))
	}}
}
