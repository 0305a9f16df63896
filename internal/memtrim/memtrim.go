// Package memtrim gives back the memory a long-running podsup only needed
// to start: the pages of its own executable that start-up touched (the HCL
// parser, the CLI, init code) and that an idle supervisor never runs again.
//
// The kernel maps a binary's pages in as they are first used, and maps
// their neighbours with them (fault-around), so after start-up most of a
// 12 MB executable is resident although the steady state uses a fraction
// of it. TrimExecutable asks the kernel to reclaim those pages
// (MADV_PAGEOUT) and to fault later ones in one at a time (MADV_RANDOM).
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
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	total := 0
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
		_ = madvise(start, end-start, unix.MADV_RANDOM)
		if madvise(start, end-start, unix.MADV_PAGEOUT) == nil {
			total += int(end - start)
		}
	}
	return total
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
