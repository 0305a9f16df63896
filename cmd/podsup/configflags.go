package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/internal/memtrim"
	"github.com/podsup/podsup/spec"
)

// configFlags are the flags that name a configuration, shared by up and
// validate: -f (files and conf.d directories, repeatable), --var and
// --var-file.
type configFlags struct {
	files    []string
	vars     []string
	varFiles []string
}

func (c *configFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&c.files, "file", "f", nil,
		"configuration file, or directory whose *.hcl files are read in lexical order; repeat to load several as one (default ./podsup.hcl, then /etc/podsup/podsup.hcl)")
	fs.StringArrayVar(&c.vars, "var", nil, "set a configuration variable, NAME=VALUE; repeatable, a later one wins (over --var-file and PODSUP_VAR_NAME too)")
	fs.StringArrayVar(&c.varFiles, "var-file", nil, "HCL file of NAME = value variable settings; repeatable, a later one wins (over PODSUP_VAR_NAME)")
}

// source finds the files the flags name (or the default file): what a
// running podsup re-reads at every reload.
func (c *configFlags) source() (configSource, error) {
	paths, err := config.FindAll(c.files)
	if err != nil {
		return configSource{}, err
	}
	return configSource{paths: paths, opts: config.Options{Vars: c.vars, VarFiles: c.varFiles}}, nil
}

// configSource is a configuration's files, directories and variables.
type configSource struct {
	paths []string
	opts  config.Options
}

// String names the files for messages and logs.
func (s configSource) String() string { return strings.Join(s.paths, ", ") }

// loadTrimThreshold is how much loading a configuration may allocate
// before podsup gives the heap back to the kernel: 10,000 groups allocate
// about 900 MB while they are parsed and leave a configuration of about
// 12 MB, and the Go runtime would return the rest only over minutes, to a
// supervisor that is otherwise idle. A few groups allocate well under
// this, and pay no extra GC.
const loadTrimThreshold = 64 << 20

// errInvalidConfig is load's error for a configuration with problems,
// once they are printed. It stands for the *config.Error, which holds the
// parsed files for its snippets: hundreds of MB for a large
// configuration, that must be garbage before the heap is given back.
var errInvalidConfig = errors.New("invalid configuration")

// load loads the configuration, printing diagnostics to w on error. At
// start and at every reload, whether the configuration is taken or
// refused, what its parse allocated is given back to the kernel once it
// is garbage (loadTrimThreshold).
func (s configSource) load(w io.Writer) (*spec.Config, error) {
	before := memtrim.HeapAllocated()
	cfg, err := s.loadAndPrint(w)
	memtrim.ReturnHeapAfter(before, loadTrimThreshold)
	return cfg, err
}

// requireGroups refuses, for validate and up, a configuration with no
// group: it would run nothing, forever, without a word, and the usual
// cause is a mistake (an empty file: a failed "podsup-kube convert >
// FILE" leaves one). A reload may still empty a running podsup.
func (s configSource) requireGroups(cfg *spec.Config, w io.Writer) error {
	if len(cfg.Groups) > 0 {
		return nil
	}
	fmt.Fprintf(w, "podsup: %s: error: the configuration has no group, so there is nothing to run: write at least one group block (is the file empty? a failed \"podsup-kube convert > FILE\" leaves it so)\n", s)
	return errInvalidConfig
}

func (s configSource) loadAndPrint(w io.Writer) (*spec.Config, error) {
	cfg, err := s.opts.Load(s.paths...)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			_ = ce.Print(w)
			return nil, errInvalidConfig
		}
		fmt.Fprintln(w, "podsup:", err)
		return nil, err
	}
	return cfg, nil
}
