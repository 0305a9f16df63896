// Package memtrim gives back the memory a long-running podsup only needed
// to start: the pages of its own executable that start-up touched (the HCL
// parser, the CLI, init code) and that an idle supervisor never runs again.
//
// The kernel maps a binary's pages in as they are first used, and maps
// their neighbours with them (fault-around), so after start-up most of a
// 12 MB executable is resident although the steady state uses a fraction
// of it. TrimExecutable asks the kernel to reclaim those pages
// (MADV_PAGEOUT) and to fault later ones in one at a time (MADV_RANDOM:
// no read-ahead; fault-around still maps the neighbours that are in the
// page cache, which is why the pages must leave it, not only podsup's
// page tables: see ReadyExecutable).
// Code that runs again is faulted back in, from the page cache when it is
// still there; what never runs stays out. Nothing writable is touched.
//
// It also gives back the heap that a one-off burst of work left free: the
// reload of a large configuration (ReturnHeapAfter), and start-up itself
// once the first starts are over (AfterStartup, which trims the executable
// too). The Go runtime would otherwise return it only over minutes, or
// not at all while it stays under the next GC's goal.
package memtrim

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// TrimExecutable releases the resident pages of this process's executable
// mappings. It returns how many bytes of mappings it advised; errors are
// not fatal (an old kernel without MADV_PAGEOUT simply keeps the pages).
func TrimExecutable() int {
	total := 0
	eachExecutableMapping(func(start, length uint64) {
		_ = madvise(start, length, unix.MADV_RANDOM)
		if madvise(start, length, unix.MADV_PAGEOUT) == nil {
			total += int(length)
		}
	})
	return total
}

// ReadyExecutable undoes TrimExecutable's MADV_RANDOM, for a burst of
// code the steady state never runs: podsup's shutdown. MADV_PAGEOUT took
// that code out of the page cache too, and under MADV_RANDOM each fault
// read one page from disk, with no read-ahead: a trimmed podsup up with
// 100 processes read 214-215 pages back in its shutdown, 98-100 once
// this advice is undone first (perf stat -e major-faults,
// docs/benchmarks.md). It returns how many bytes of mappings it advised.
//
// What it does not do is make the first stop signal as quick as an
// untrimmed podsup's: that one waits for its own pages all the same
// (7-13 ms against 0.6-1.8 ms, bench/sidebyside S4 -s4-settle 6s). Leaving
// the pages in the page cache (MADV_DONTNEED instead of MADV_PAGEOUT)
// would, but fault-around then maps sixteen cached pages a fault in the
// steady state too, which MADV_RANDOM does not stop: PSS at 100 processes
// rose from 6.2 to 6.5-6.9 MB, over issue #28's 6.5.
func ReadyExecutable() int {
	total := 0
	eachExecutableMapping(func(start, length uint64) {
		if madvise(start, length, unix.MADV_NORMAL) == nil {
			total += int(length)
		}
	})
	return total
}

// eachExecutableMapping calls fn with each read-only mapping of this
// process's executable file (its text and read-only data).
func eachExecutableMapping(fn func(start, length uint64)) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		fn(start, end-start)
	}
}

// madvise advises on an address range of this process; the raw syscall
// takes the range as numbers, so no Go pointer is made up for it.
func madvise(addr, length uint64, advice int) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(addr), uintptr(length), uintptr(advice))
	if errno != 0 {
		return errno
	}
	return nil
}
