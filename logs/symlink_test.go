package logs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/testusers"
	"github.com/podsup/podsup/spec"
	"github.com/rs/zerolog"
)

// victim is a root-owned file outside log_dir that a hostile process
// points a link at: its content, size and mtime must not change.
type victim struct {
	path  string
	want  []byte
	mtime time.Time
}

func newVictim(t *testing.T) victim {
	t.Helper()
	v := victim{path: filepath.Join(t.TempDir(), "rc"), want: []byte("root's own file\n"), mtime: time.Unix(1_000_000_000, 0)}
	if err := os.WriteFile(v.path, v.want, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(v.path, v.mtime, v.mtime); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v victim) check(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(v.path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(v.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, v.want) || st.Size() != int64(len(v.want)) || !st.ModTime().Equal(v.mtime) {
		t.Errorf("podsup wrote through a link: %s is now %q (size %d, mtime %v), was %q (mtime %v)",
			v.path, b, st.Size(), st.ModTime(), v.want, v.mtime)
	}
}

// bothOpens runs f with openat2 and with the O_NOFOLLOW fallback that
// kernels without openat2 get.
func bothOpens(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", func(t *testing.T) { noOpenat2.Store(false); f(t) })
	t.Run("openat", func(t *testing.T) {
		noOpenat2.Store(true)
		t.Cleanup(func() { noOpenat2.Store(false) })
		f(t)
	})
}

// logDirHub is a hub writing to a fresh log_dir, its log in the returned
// buffer.
func logDirHub(t *testing.T, dir string) (*Hub, *syncBuffer) {
	t.Helper()
	var logged syncBuffer
	h := newTestHub(t, HubOptions{Dir: dir, Logger: zerolog.New(&logged)})
	return h, &logged
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// A process that replaced its log file with a link to a root-owned file
// gets nothing written there: the file is opened without following links,
// the refusal is logged once, and its lines still reach the tail.
func TestLogFileSymlinkIsNotFollowed(t *testing.T) {
	bothOpens(t, func(t *testing.T) {
		v := newVictim(t)
		dir := filepath.Join(t.TempDir(), "logs")
		mkdir(t, dir, 0o750)
		mkdir(t, filepath.Join(dir, "web"), 0o750)
		if err := os.Symlink(v.path, filepath.Join(dir, "web", "api.log")); err != nil {
			t.Fatal(err)
		}
		h, logged := logDirHub(t, dir)
		_, a := startSh(t, h, "web", "api", "1", spec.Log{}, "echo 'echo pwned'; echo again; echo and again")
		waitDone(t, a)
		v.check(t)
		if got := texts(mustTail(t, h, "web", "api", 0, false)); len(got) != 3 {
			t.Errorf("tail %q: the refused file cost the tail its lines", got)
		}
		if n := strings.Count(logged.String(), "symbolic link"); n != 1 {
			t.Errorf("the refusal was logged %d times, want once:\n%s", n, logged)
		}
		if st, err := os.Lstat(filepath.Join(dir, "web", "api.log")); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced or removed: %v %v", st, err)
		}
	})
}

// A log file that is a hard link to root's file (planted while the
// directory was writable by others, and left when it was fixed) is not
// written either.
func TestLogFileHardLinkIsRefused(t *testing.T) {
	bothOpens(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "logs")
		mkdir(t, dir, 0o750)
		mkdir(t, filepath.Join(dir, "web"), 0o750)
		v := newVictim(t)
		v.path = filepath.Join(dir, "rc") // a hard link must stay on one file system
		if err := os.WriteFile(v.path, v.want, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(v.path, v.mtime, v.mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(v.path, filepath.Join(dir, "web", "api.log")); err != nil {
			t.Fatal(err)
		}
		h, logged := logDirHub(t, dir)
		_, a := startSh(t, h, "web", "api", "1", spec.Log{}, "echo 'echo pwned'")
		waitDone(t, a)
		v.check(t)
		if !strings.Contains(logged.String(), "hard links") {
			t.Errorf("the refusal does not say why:\n%s", logged)
		}
	})
}

// A group directory that is a link, writable by others or owned by
// another user is refused, and so is such a log_dir: nothing is written
// in or through them.
func TestLogInsecureDirectoriesAreRefused(t *testing.T) {
	bothOpens(t, func(t *testing.T) {
		t.Run("group directory is a link", func(t *testing.T) {
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			mkdir(t, elsewhere, 0o750)
			v := newVictim(t)
			v.path = filepath.Join(elsewhere, "api.log")
			if err := os.WriteFile(v.path, v.want, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(v.path, v.mtime, v.mtime); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o750)
			if err := os.Symlink(elsewhere, filepath.Join(dir, "web")); err != nil {
				t.Fatal(err)
			}
			h, logged := logDirHub(t, dir)
			_, a := startSh(t, h, "web", "api", "1", spec.Log{}, "echo one; echo two")
			waitDone(t, a)
			v.check(t)
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
				t.Errorf("files made through the linked group directory: %v", ents)
			}
			if n := strings.Count(logged.String(), "is a symbolic link"); n != 1 {
				t.Errorf("the refusal was logged %d times, want once:\n%s", n, logged)
			}
		})
		t.Run("group directory writable by others", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o750)
			mkdir(t, filepath.Join(dir, "web"), 0o777)
			h, logged := logDirHub(t, dir)
			_, a := startSh(t, h, "web", "api", "1", spec.Log{}, "echo one")
			waitDone(t, a)
			if _, err := os.Lstat(filepath.Join(dir, "web", "api.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a log file was made in a world-writable group directory: %v", err)
			}
			if !strings.Contains(logged.String(), "chmod go-w") {
				t.Errorf("the refusal does not name the fix:\n%s", logged)
			}
		})
		t.Run("group directory owned by another user", func(t *testing.T) {
			testusers.RequireRoot(t)
			u := testusers.NewUser(t)
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o750)
			mkdir(t, filepath.Join(dir, "web"), 0o750)
			if err := os.Chown(filepath.Join(dir, "web"), u.UID, u.GID); err != nil {
				t.Fatal(err)
			}
			h, logged := logDirHub(t, dir)
			_, a := startSh(t, h, "web", "api", "1", spec.Log{}, "echo one")
			waitDone(t, a)
			if _, err := os.Lstat(filepath.Join(dir, "web", "api.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a log file was made in a group directory another user owns: %v", err)
			}
			if !strings.Contains(logged.String(), "owned by uid") {
				t.Errorf("the refusal does not say why:\n%s", logged)
			}
		})
		t.Run("log_dir writable by others", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o777)
			h, err := NewHub(HubOptions{Dir: dir})
			if err == nil {
				_ = h.Close()
				t.Fatal("a world-writable log_dir was accepted")
			}
			if !errors.Is(err, ErrInsecureLogDir) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "chmod go-w") {
				t.Errorf("error %q does not name log_dir and the fix", err)
			}
		})
	})
}

// Rotation renames, removes and truncates names, never what a link in
// their place points to: links planted at PROCESS.log.1 and .2 are moved
// and dropped, and max_files = 1's truncation of a PROCESS.log swapped for
// a link leaves the link's target whole.
func TestLogRotationDoesNotFollowPlantedLinks(t *testing.T) {
	bothOpens(t, func(t *testing.T) {
		long := strings.Repeat("x", 150)
		t.Run("links at the rotated names", func(t *testing.T) {
			v1, v2 := newVictim(t), newVictim(t)
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o750)
			mkdir(t, filepath.Join(dir, "web"), 0o750)
			for i, v := range []victim{v1, v2} {
				if err := os.Symlink(v.path, filepath.Join(dir, "web", "api.log."+string(rune('1'+i)))); err != nil {
					t.Fatal(err)
				}
			}
			h, _ := logDirHub(t, dir)
			_, a := startSh(t, h, "web", "api", "1", spec.Log{MaxSize: 100, MaxFiles: 3},
				"for i in 1 2 3 4 5; do echo "+long+"; done")
			waitDone(t, a)
			v1.check(t)
			v2.check(t)
			for _, n := range []string{"api.log", "api.log.1", "api.log.2"} {
				st, err := os.Lstat(filepath.Join(dir, "web", n))
				if err != nil || !st.Mode().IsRegular() {
					t.Errorf("%s after rotation: %v %v, want a regular file", n, st, err)
				}
			}
		})
		t.Run("max_files = 1 truncates no link target", func(t *testing.T) {
			v := newVictim(t)
			dir := filepath.Join(t.TempDir(), "logs")
			mkdir(t, dir, 0o750)
			h, _ := logDirHub(t, dir)
			file := filepath.Join(dir, "web", "api.log")
			goOn := filepath.Join(t.TempDir(), "go-on")
			_, a := startSh(t, h, "web", "api", "1", spec.Log{MaxSize: 100, MaxFiles: 1},
				"echo first; while [ ! -e "+goOn+" ]; do sleep 0.02; done; echo "+long+"; echo "+long)
			eventually(t, "the first line in the file", func() bool {
				b, _ := os.ReadFile(file)
				return bytes.Contains(b, []byte("first"))
			})
			// What the owner of an insecure directory would do: the
			// live file swapped for a link to root's file.
			if err := os.Rename(file, file+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(v.path, file); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(goOn, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			waitDone(t, a)
			v.check(t)
		})
	})
}
