package logs

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// FuzzLogPath: whatever the group and process names (slashes, "..",
// absolute paths, NUL) and whatever a hostile user planted in log_dir
// (links to files and directories outside it, links to "..", loops,
// FIFOs, directories writable by all, files where directories go), the
// file podsup writes is a regular file beneath log_dir reached through no
// link, and nothing outside log_dir changes: not a byte, not a name.
func FuzzLogPath(f *testing.F) {
	f.Add("web", "api", []byte{}, uint8(3), false)
	f.Add("web", "api", []byte{1, 1}, uint8(1), false)        // PROCESS.log -> a file outside
	f.Add("web", "api", []byte{0, 2}, uint8(3), true)         // the group directory -> a directory outside
	f.Add("web", "api", []byte{2, 1, 3, 4}, uint8(4), false)  // PROCESS.log.1 -> outside, .2 -> ".."
	f.Add("..", "api", []byte{}, uint8(2), false)             // a group that is a parent
	f.Add("/tmp", "../../x", []byte{}, uint8(2), true)        // absolute and climbing names
	f.Add("web", "a/b", []byte{0, 6}, uint8(2), false)        // a name with a slash; a world-writable group directory
	f.Add("web", "api", []byte{1, 8, 5, 9}, uint8(1), false)  // a FIFO; log_dir world-writable
	f.Add("web", "api", []byte{1, 7, 0, 10}, uint8(2), false) // a self loop; a regular file as the group directory
	f.Fuzz(func(t *testing.T, group, process string, tree []byte, maxFiles uint8, fallback bool) {
		noOpenat2.Store(fallback)
		defer noOpenat2.Store(false)
		base := t.TempDir()
		logDir := filepath.Join(base, "logs")
		outside := filepath.Join(base, "outside")
		for _, d := range []string{logDir, outside, filepath.Join(outside, "d")} {
			if err := os.Mkdir(d, 0o750); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("root's\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		plantTree(t, logDir, outside, group, process, tree)
		before := snapshot(t, base, logDir)

		r := newRotatingFile(logDir, group, process)
		lim := fileLimits{maxSize: 1, maxFiles: int(maxFiles%5) + 1}
		for i := 0; i < 3; i++ {
			if err := r.write([]byte("a line\n")); err == nil {
				checkBeneath(t, r, logDir)
			}
			_ = r.rotate(lim) // refused or not, nothing outside may change
		}
		r.close()

		if after := snapshot(t, base, logDir); after != before {
			t.Fatalf("outside log_dir changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// oneName is the test's own idea of a name that stays one component, so
// that planting never escapes the fuzz directory.
func oneName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00") && len(s) < 100 && utf8.ValidString(s)
}

// plantTree makes what tree asks, byte pairs (slot, kind), where a hostile
// user would: the group directory, the log file and its rotated names, and
// log_dir's own mode.
func plantTree(t *testing.T, logDir, outside, group, process string, tree []byte) {
	ok := oneName(group) && oneName(process)
	for i := 0; i+1 < len(tree); i += 2 {
		slot, kind := tree[i]%6, tree[i+1]%12
		if slot == 5 {
			modes := []os.FileMode{0o750, 0o777, 0o775, 0o1777 | os.ModeSticky}
			_ = os.Chmod(logDir, modes[int(kind)%len(modes)])
			continue
		}
		if !ok {
			continue
		}
		p := filepath.Join(logDir, group)
		if slot > 0 {
			p = filepath.Join(p, process+".log")
			if slot > 1 {
				p += "." + strconv.Itoa(int(slot-1))
			}
		}
		if slot > 0 {
			_ = os.Mkdir(filepath.Dir(p), 0o750) // may be something else already
		}
		switch kind {
		case 1:
			_ = os.Symlink(filepath.Join(outside, "victim"), p)
		case 2:
			_ = os.Symlink(filepath.Join(outside, "d"), p)
		case 3:
			_ = os.Symlink("../../outside/victim", p)
		case 4:
			_ = os.Symlink("..", p)
		case 5:
			_ = syscall.Mkfifo(p, 0o600)
		case 6:
			_ = os.Mkdir(p, 0o777)
			_ = os.Chmod(p, 0o777)
		case 7:
			_ = os.Symlink(filepath.Base(p), p)
		case 8:
			_ = os.Symlink("../outside", p)
		case 9:
			_ = os.Mkdir(p, 0o750)
		case 10:
			// O_EXCL: never open what is planted there already (a FIFO
			// would block the test, not podsup).
			if f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				_, _ = f.WriteString("planted\n")
				_ = f.Close()
			}
		case 11:
			_ = os.Symlink(filepath.Join(outside, "nothing-yet"), p) // a dangling link O_CREAT would follow
		}
	}
}

// snapshot describes everything under base except log_dir: names, modes,
// sizes, mtimes and contents.
func snapshot(t *testing.T, base, logDir string) string {
	var b strings.Builder
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == logDir {
			return filepath.SkipDir
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d", p, st.Mode(), st.Size(), st.ModTime().UnixNano())
		if st.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkBeneath: the open log file is log_dir/GROUP/PROCESS.log itself, a
// regular file, with no link on the way.
func checkBeneath(t *testing.T, r *rotatingFile, logDir string) {
	t.Helper()
	if r.f == nil {
		return
	}
	want := filepath.Join(logDir, r.group, r.name)
	if !strings.HasPrefix(want, logDir+"/") || strings.Count(want[len(logDir)+1:], "/") != 1 {
		t.Fatalf("log file %q is not log_dir/GROUP/FILE", want)
	}
	got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(r.f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("the open log file is %s, want %s", got, want)
	}
	for _, p := range []string{filepath.Dir(want), want} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("%s is a link", p)
		}
	}
	var fst, lst syscall.Stat_t
	if err := syscall.Fstat(int(r.f.Fd()), &fst); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Lstat(want, &lst); err != nil {
		t.Fatal(err)
	}
	if fst.Ino != lst.Ino || fst.Dev != lst.Dev || fst.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Fatalf("the open log file is not the regular file %s", want)
	}
	if !bytes.HasPrefix([]byte(got), []byte(logDir+"/")) {
		t.Fatalf("%s is not beneath %s", got, logDir)
	}
}
