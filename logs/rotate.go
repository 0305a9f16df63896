package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/podsup/podsup/spec"
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
// Only the epoll loop uses a rotatingFile (Close after the loop stopped).
type rotatingFile struct {
	path string

	f    *os.File
	size int64
	err  error // the last open/write error, reported once
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
	if err := os.MkdirAll(filepath.Dir(r.path), 0o750); err != nil {
		return fmt.Errorf("creating log directory: %w", err)
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("opening log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // unusable anyway; the Stat error is the one to report
		return fmt.Errorf("reading log file size: %w", err)
	}
	r.f, r.size = f, st.Size()
	return nil
}

// rotate closes the live file and shifts path.i to path.(i+1), dropping the
// oldest, so the next write starts a new file.
func (r *rotatingFile) rotate(l fileLimits) error {
	if r.f != nil {
		_ = r.f.Close() // everything was written with write(2); nothing to flush
		r.f = nil
	}
	r.size = 0
	if l.maxFiles <= 1 {
		if err := os.Truncate(r.path, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("truncating log file: %w", err)
		}
		return nil
	}
	if err := os.Remove(r.nth(l.maxFiles - 1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing oldest log file: %w", err)
	}
	for i := l.maxFiles - 2; i >= 0; i-- {
		if err := os.Rename(r.nth(i), r.nth(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotating log file: %w", err)
		}
	}
	return nil
}

func (r *rotatingFile) nth(i int) string {
	if i == 0 {
		return r.path
	}
	return r.path + "." + strconv.Itoa(i)
}

func (r *rotatingFile) close() {
	if r.f != nil {
		_ = r.f.Close() // written with write(2); a close error loses nothing more
		r.f = nil
	}
}
