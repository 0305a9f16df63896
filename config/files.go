package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/podsup/podsup/spec"
)

// ErrNoFiles means the paths given to Load hold no configuration file:
// only directories without a *.hcl file.
var ErrNoFiles = errors.New("no configuration file to load")

// Options are what a configuration is loaded with besides its files: the
// values of its variables and the environment env() and PODSUP_VAR_*
// read. The zero value reads the process's environment.
type Options struct {
	// Vars are NAME=VALUE assignments (--var), in order: a later one wins.
	Vars []string
	// VarFiles are HCL files of NAME = value attributes (--var-file), in
	// order: a later one wins. They are read at every Load.
	VarFiles []string
	// LookupEnv reads the environment for env() and PODSUP_VAR_*; nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)

	// readEnvFile reads an env_file; nil means readEnvFile. The fuzz test
	// sets one that reads nothing.
	readEnvFile func(string) ([]byte, error)
}

func (o Options) withDefaults() Options {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.readEnvFile == nil {
		o.readEnvFile = readEnvFile
	}
	return o
}

// Load reads every path as one configuration. A path that is a directory
// stands for every *.hcl file in it (not in its subdirectories), in
// lexical order, as systemd and nginx read a conf.d; a directory with
// none adds nothing, but paths that hold no file at all are ErrNoFiles. The top-level blocks of all the files are taken in
// order, as if they were one file: a group defined in two files is an
// error naming both places, and so is a supervisor or top-level backoff
// block in more than one file. Each file is refused on its own when it
// is over the limits (MaxFileSize, MaxNesting) or is not a regular file,
// and the whole configuration when its files together are over
// MaxConfigSize, MaxFiles, MaxTokens, MaxGroups or MaxProcesses. The sizes
// are checked from the files' metadata before any is read, and again as
// they are read (a file may grow in between).
//
// Load reads the directories, the files, the var files and the env files
// afresh each time: a reload that calls it again sees every change.
func (o Options) Load(paths ...string) (*spec.Config, error) {
	names, dropped, err := expand(paths)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		// A directory of misnamed files (*.conf) would run nothing without
		// a word; a file with no group says what it means.
		return nil, fmt.Errorf("%w: no *.hcl file in %s", ErrNoFiles, strings.Join(paths, ", "))
	}
	if err := checkSizes(names, dropped, o.VarFiles); err != nil {
		return nil, err
	}
	srcs := make([]source, 0, len(names))
	left := int64(MaxConfigSize)
	for _, name := range names {
		src, limitErr, err := readConfigFile(name, left, len(names)+len(o.VarFiles))
		if err != nil {
			return nil, err
		}
		if limitErr != nil {
			return nil, limitErr
		}
		left -= int64(len(src))
		srcs = append(srcs, source{name: name, src: src})
	}
	return o.parse(srcs)
}

// checkSizes refuses a configuration of more than MaxFiles files, or with
// a file over MaxFileSize, or of more than MaxConfigSize bytes in all,
// from the files' metadata: nothing is read. (readConfigFile checks again
// as it reads.)
func checkSizes(names []string, dropped int, varFiles []string) error {
	all := append(slices.Clip(names), varFiles...)
	if len(all)+dropped > MaxFiles {
		return &Error{Diagnostics: hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Too many configuration files",
			Detail: fmt.Sprintf("The configuration has %d files (every -f, the *.hcl files of its directories and the --var-files); podsup reads at most %d. Are the right directories named?",
				len(all)+dropped, MaxFiles),
		}}}
	}
	var total int64
	crossing := ""
	for _, name := range all {
		fi, err := os.Stat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue // readConfigFile says what is wrong with it
		}
		if fi.Size() > MaxFileSize {
			return limitsError(hcl.Diagnostics{tooLarge(name, byteCount(fi.Size()))}, nil)
		}
		total += fi.Size()
		if total > MaxConfigSize && crossing == "" {
			crossing = name
		}
	}
	if crossing != "" {
		return limitsError(hcl.Diagnostics{configTooLarge(crossing, len(all), byteCount(total))}, nil)
	}
	return nil
}

// expand replaces each directory of paths with its *.hcl files, sorted.
//
// It keeps no more than MaxFiles+1 names (Load refuses more) and counts
// the rest in dropped: a directory of a million files costs a count, not
// a list.
func expand(paths []string) (names []string, dropped int, err error) {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, 0, fmt.Errorf("reading config file: %w", err)
		}
		if !fi.IsDir() {
			names = append(names, p)
			continue
		}
		files, n, err := hclFilesIn(p, max(MaxFiles+1-len(names), 0))
		if err != nil {
			return nil, 0, err
		}
		names = append(names, files...)
		dropped += n
	}
	return names, dropped, nil
}

// hclFilesIn lists the *.hcl files of dir in lexical order, at most room
// of them: the others are only counted, in dropped. A *.hcl entry that is
// a directory is skipped; a symlink counts as what it points to. The
// directory is read a batch at a time.
func hclFilesIn(dir string, room int) (out []string, dropped int, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("reading config directory: %w", err)
	}
	defer d.Close()
	for {
		entries, err := d.ReadDir(1024)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".hcl") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if len(out) >= room {
				dropped++
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := os.Stat(path)
			if err != nil {
				return nil, 0, fmt.Errorf("reading config directory: %w", err)
			}
			if !fi.IsDir() {
				out = append(out, path)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading config directory: %w", err)
		}
	}
	sort.Strings(out)
	return out, dropped, nil
}

// FindAll is Find for several paths: each of explicit must exist; with
// none, it is the first of DefaultPaths that exists.
func FindAll(explicit []string) ([]string, error) {
	if len(explicit) == 0 {
		p, err := Find("")
		if err != nil {
			return nil, err
		}
		return []string{p}, nil
	}
	for _, p := range explicit {
		if p == "" {
			return nil, errors.New("finding config file: an empty path was given")
		}
		if _, err := Find(p); err != nil {
			return nil, err
		}
	}
	return explicit, nil
}

// fileOrder ranks file names by the order they were loaded in, for
// sortDiagnostics.
func fileOrder(srcs []source) map[string]int {
	order := make(map[string]int, len(srcs))
	for i, s := range srcs {
		order[s.name] = i
	}
	return order
}
