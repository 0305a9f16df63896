package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/podsup/podsup/config"
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

// load loads the configuration, printing diagnostics to w on error.
func (s configSource) load(w io.Writer) (*spec.Config, error) {
	cfg, err := s.opts.Load(s.paths...)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			_ = ce.Print(w)
		} else {
			fmt.Fprintln(w, "podsup:", err)
		}
		return nil, err
	}
	return cfg, nil
}
