package logs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// Defaults for per-process files when spec.Log leaves them zero: a file in
// log_dir must never grow without bound.
const (
	DefaultMaxFileSize = 10 << 20
	DefaultMaxFiles    = 5
)

// rotatingFile is one process's log file with size-based rotation, by the
// limits of the instance writing:
// path, path.1, ... path.(maxFiles-1), newest first. maxFiles counts every
// file including the live one, as docker's max-file does. It is opened on
// the first write, so a silent process holds no fd.
//
// Every open, rename, removal and truncation is relative to the group
// directory's fd and follows no link (safeopen.go): a process that can
// reach log_dir must not be able to redirect root's writes.
//
// Only the epoll loop uses a rotatingFile (Close after the loop stopped).
type rotatingFile struct {
	dir   string // log_dir
	group string // the directory in log_dir
	name  string // PROCESS.log in it
	path  string // dir/group/name, for messages

	f    *os.File
	size int64
	err  error // the last open/write error, reported once
}

func newRotatingFile(dir, group, process string) *rotatingFile {
	return &rotatingFile{dir: dir, group: group, name: process + ".log", path: filepath.Join(dir, group, process+".log")}
}

// fileLimits is the rotation a spec asks for, defaults applied.
type fileLimits struct {
	maxSize  int64
	maxFiles int
}

func fileLimitsOf(l spec.Log) fileLimits {
	fl := fileLimits{maxSize: l.MaxSize, maxFiles: l.MaxFiles}
	if fl.maxSize <= 0 {
		fl.maxSize = DefaultMaxFileSize
	}
	if fl.maxFiles <= 0 {
		fl.maxFiles = DefaultMaxFiles
	}
	return fl
}

// write appends p; the caller rotates first when p would not fit.
func (r *rotatingFile) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if r.f == nil {
		if err := r.open(); err != nil {
			return err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	if err != nil {
		return fmt.Errorf("writing %s: %w", r.path, err)
	}
	return nil
}

func (r *rotatingFile) open() error {
	gd, err := openGroupDir(r.dir, r.group, true)
	if err != nil {
		return err
	}
	defer unix.Close(gd) // the file's fd is all that is kept
	return r.openIn(gd)
}

// openIn opens the live file in the group directory gd, a regular file
// of podsup's or none (created), and takes its size.
func (r *rotatingFile) openIn(gd int) error {
	// O_NONBLOCK: a FIFO where the file goes fails (ENXIO) instead of
	// stalling the capture loop; cleared once it is known to be a file.
	fd, err := openBeneath(gd, r.name, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NONBLOCK, 0o640)
	if err != nil {
		return explain(err, gd, r.name, r.path, "opening log file")
	}
	st, err := regularFile(fd, r.path)
	if err != nil {
		_ = unix.Close(fd) // refused before any write
		return err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd) // unusable anyway
		return fmt.Errorf("opening log file %s: %w", r.path, err)
	}
	r.f, r.size = os.NewFile(uintptr(fd), r.path), st.Size
	return nil
}

// rotate closes the live file, shifts path.i to path.(i+1), dropping the
// oldest, and opens a new live file in the same group directory fd (one
// lookup of log_dir per rotation). With one file, the live one is
// truncated instead. Names are renamed and removed as they are, links
// included: a link is moved or removed, never what it points to.
func (r *rotatingFile) rotate(l fileLimits) error {
	r.close()
	r.size = 0
	gd, err := openGroupDir(r.dir, r.group, true)
	if err != nil {
		return err
	}
	defer unix.Close(gd) // the new file's fd is all that is kept
	if l.maxFiles <= 1 {
		if err := r.openIn(gd); err != nil {
			return err
		}
		if err := r.f.Truncate(0); err != nil {
			r.close()
			return fmt.Errorf("truncating log file %s: %w", r.path, err)
		}
		r.size = 0
		return nil
	}
	if err := unix.Unlinkat(gd, r.nth(l.maxFiles-1), 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("removing oldest log file %s: %w", filepath.Join(r.dir, r.group, r.nth(l.maxFiles-1)), err)
	}
	for i := l.maxFiles - 2; i >= 0; i-- {
		if err := unix.Renameat(gd, r.nth(i), gd, r.nth(i+1)); err != nil && err != unix.ENOENT {
			return fmt.Errorf("rotating log file %s: %w", filepath.Join(r.dir, r.group, r.nth(i)), err)
		}
	}
	return r.openIn(gd)
}

// nth is the name in the group directory of the i-th file.
func (r *rotatingFile) nth(i int) string {
	if i == 0 {
		return r.name
	}
	return r.name + "." + strconv.Itoa(i)
}

func (r *rotatingFile) close() {
	if r.f != nil {
		_ = r.f.Close() // written with write(2); a close error loses nothing more
		r.f = nil
	}
}
