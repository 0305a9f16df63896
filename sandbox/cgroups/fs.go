package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fsOps are the two directory operations that differ between cgroupfs and
// the fake tree tests build in a temp dir: on cgroupfs mkdir makes the
// control files appear and rmdir removes a cgroup that still lists them.
// Writes go through write so the fake can also imitate the kernel's
// rules (EBUSY for "no internal processes").
type fsOps struct {
	mkdir func(dir string) error
	rmdir func(dir string) error
	write func(file, value string) error
}

var kernelFS = fsOps{
	mkdir: func(dir string) error { return os.Mkdir(dir, 0o755) },
	rmdir: rmdir,
	write: writeFile,
}

// rmdir removes a cgroup directory with one syscall: os.Remove tries
// unlink first, a second path walk through cgroupfs for every cgroup.
func rmdir(dir string) error {
	if err := unix.Rmdir(dir); err != nil {
		return &os.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	return nil
}

// writeFile writes one value to an existing control file. It never creates
// files: a missing control file means a missing controller, and that must
// show as an error (ENOENT), also in the fake tree.
//
// Control files are read and written with plain syscalls, not *os.File:
// cgroupfs files can be polled, so os.Open would register each with the
// runtime's epoll and unregister it at Close, which on the restart path
// cost more than the read itself.
func writeFile(file, value string) error {
	fd, err := openFile(file, unix.O_WRONLY|unix.O_TRUNC)
	if err != nil {
		return err
	}
	_, werr := ignoringEINTR(func() (int, error) { return unix.Write(fd, []byte(value)) })
	cerr := unix.Close(fd)
	if werr != nil {
		return fmt.Errorf("writing %q to %s: %w", value, file, werr)
	}
	if cerr != nil {
		return fmt.Errorf("closing %s: %w", file, cerr)
	}
	return nil
}

// openFile opens a control file; errors are *os.PathError, so
// errors.Is(err, os.ErrNotExist) works as with os.Open.
func openFile(file string, flags int) (int, error) {
	fd, err := ignoringEINTR(func() (int, error) { return unix.Open(file, flags|unix.O_CLOEXEC, 0) })
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: file, Err: err}
	}
	return fd, nil
}

// readFile reads a whole (small) control file.
func readFile(file string) ([]byte, error) {
	fd, err := openFile(file, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(fd) }() // read-only: nothing to lose
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := ignoringEINTR(func() (int, error) { return unix.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: file, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func ignoringEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// readWords reads a space-separated list, e.g. cgroup.controllers.
func readWords(file string) ([]string, error) {
	b, err := readFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// readUint reads a file holding one number ("max" reads as 0, with ok false).
func readUint(file string) (n uint64, ok bool, err error) {
	b, err := readFile(file)
	if err != nil {
		return 0, false, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false, nil
	}
	n, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("parsing %s: %w", file, err)
	}
	return n, true, nil
}

// readKeyed reads key from a "key value" per line file (memory.events,
// cpu.stat, memory.oom_control, freezer-less cgroup.events).
func readKeyed(file, key string) (uint64, error) {
	b, err := readFile(file)
	if err != nil {
		return 0, err
	}
	return parseKeyed(b, file, key)
}

// parseKeyed finds key in b, the contents of a flat-keyed file.
func parseKeyed(b []byte, file, key string) (uint64, error) {
	// Line by line over the bytes read, without a bufio.Scanner: its 4 KiB
	// buffer was a third of the memory a restart allocated (the post-exit
	// cgroup.events read).
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(" "))
		if ok && string(k) == key {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s in %s: %w", key, file, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("reading %s: no %q line: %w", file, key, os.ErrNotExist)
}

// readPids reads cgroup.procs. A cgroup removed between listing and
// reading (its open file then answers ENODEV) reads as gone: ErrNotExist.
func readPids(file string) ([]int, error) {
	b, err := readFile(file)
	if errors.Is(err, unix.ENODEV) {
		return nil, fmt.Errorf("reading %s: removed meanwhile: %w", file, os.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// exists reports whether a control file is there (the kernel offers it).
func exists(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}

// childDirs lists the child cgroups of dir, one level.
func childDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// subdirs lists the child cgroups of dir, depth first, children before
// their parents (the order rmdir needs).
func subdirs(dir string) ([]string, error) {
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		child := filepath.Join(dir, e.Name())
		below, err := subdirs(child)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		out = append(out, below...)
		out = append(out, child)
	}
	return out, nil
}
