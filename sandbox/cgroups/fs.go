package cgroups

import (
	"bufio"
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
	rmdir: os.Remove,
	write: writeFile,
}

// writeFile writes one value to an existing control file. It never creates
// files: a missing control file means a missing controller, and that must
// show as an error (ENOENT), also in the fake tree.
func writeFile(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("writing %q to %s: %w", value, file, werr)
	}
	return cerr
}

// readWords reads a space-separated list, e.g. cgroup.controllers.
func readWords(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// readUint reads a file holding one number ("max" reads as 0, with ok false).
func readUint(file string) (n uint64, ok bool, err error) {
	b, err := os.ReadFile(file)
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
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
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
	b, err := os.ReadFile(file)
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
