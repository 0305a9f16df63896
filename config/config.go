// Package config owns podsup's HCL file format: the schema, decoding into
// spec values (with spec's defaults), validation with diagnostics that point
// at file:line:col, and finding the files. It starts nothing. What a reload
// changes is spec.Diff's to say, on the decoded values: the supervisor
// acts on it and the CLI reports it, so both give the same answer.
//
// # Files
//
// Load reads one file; Options.Load reads several files and
// directories as one configuration, a directory standing for its *.hcl
// files in lexical order (a conf.d). Their top-level blocks are taken in
// order as if they were one file: a group defined twice is an error
// naming both places, and so is a supervisor or top-level backoff block
// in more than one file (podsup's own settings are written once; there is
// no merge). Every Load reads everything again, so a reload sees added
// and removed files.
//
// # Environment
//
// A process's environment is podsup's own, overridden by (lowest first):
// the group's env_file files in order, the group's env, the process's
// env_file files in order, the process's env. env_file takes one path or
// a list, relative to the directory of the file that names it; a path
// starting with "-" is optional (a missing file is skipped, as systemd's
// EnvironmentFile=-). The format is docker compose's and systemd's
// (docs/config.md, "Environment files", has the details): KEY=VALUE lines, # comments,
// quotes, "export ", no $ expansion. The files are read when the
// configuration is loaded, into spec.Process.Env: a reload reads them
// again, and spec.Diff restarts exactly the processes whose environment
// changed. A missing or bad file
// is an error at the env_file entry naming the file and line; no error
// quotes a value, and no value reaches podsup's API, events or log (the
// API does not expose a process's environment).
//
// # Variables and functions
//
// A `variable "name" { default = ... }` block declares var.name, usable in
// any expression of any file. Its value is, from the lowest precedence to
// the highest (Terraform's and Nomad's order): the default, the
// environment variable PODSUP_VAR_name, each Options.VarFiles file (HCL
// attributes, literals only) in order, each Options.Vars NAME=VALUE in
// order. Values from the environment and from Vars are strings; HCL
// converts them where a number or bool is expected. A variable with no
// value, or a value for an undeclared variable from a var file or Vars,
// is an error naming it. The only function is env("NAME") or
// env("NAME", "default"), the environment at load time.
//
// # Errors
//
// Every problem in a file is reported at once, each with its position, a
// source snippet and what would be right: syntax errors and unknown fields
// from HCL, values of the wrong kind from the decoder, and everything
// spec.Config.Validate finds, mapped from the FieldError's path back to the
// attribute or block that set it.
//
// No file may crash or starve the caller: before HCL parses it, a file
// larger than MaxFileSize, longer than MaxTokens, nested deeper than
// MaxNesting or not UTF-8 is refused with a diagnostic at the place that
// crosses the limit (limits.go says why each exists); the limits apply to
// each file, var files included. An env file is at most MaxEnvFileSize
// and must be a regular file.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/podsup/podsup/spec"
	"github.com/zclconf/go-cty/cty/function"
)

// DefaultPaths are where Find looks when no file is named, in order.
var DefaultPaths = []string{"./podsup.hcl", "/etc/podsup/podsup.hcl"}

// ErrNotFound means Find was given no file and none of DefaultPaths exists.
var ErrNotFound = errors.New("no podsup configuration file found")

// Find returns the configuration file to use: explicit when it is set (it
// must exist), else the first of DefaultPaths that exists.
func Find(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("finding config file: %w", err)
		}
		return explicit, nil
	}
	for _, p := range DefaultPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (looked at %s): name one with -f FILE", ErrNotFound, strings.Join(DefaultPaths, ", "))
}

// Load reads and parses the file at path; see Parse. It is Options.Load
// of one path, with variables from their defaults and PODSUP_VAR_*.
func Load(path string) (*spec.Config, error) {
	return Options{}.Load(path)
}

// readConfigFile reads a configuration file of at most MaxFileSize bytes
// and at most left, the bytes left of MaxConfigSize; nfiles is how many
// files the configuration has, for the message. It reads no further than
// that (and one byte more, to tell a file that is too large), so that
// neither a huge file nor one that grows as it is read can exhaust
// podsup's memory. It opens without blocking and refuses anything but a
// regular file: a FIFO would block open(2) or read(2) for ever (and with
// them a reload), a device such as /dev/zero never ends. A symlink is
// followed: package managers fill conf.d with them, and the configuration
// is root's to write.
func readConfigFile(path string, left int64, nfiles int) ([]byte, *Error, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("reading config file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("reading config file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode()), nil
	}
	if fi.Size() > MaxFileSize {
		return nil, limitsError(hcl.Diagnostics{tooLarge(path, byteCount(fi.Size()))}, nil), nil
	}
	limit := min(int64(MaxFileSize), left)
	src, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading config file: %w", err)
	}
	switch {
	case len(src) > MaxFileSize:
		return nil, limitsError(hcl.Diagnostics{tooLarge(path, "more than "+byteCount(MaxFileSize))}, nil), nil
	case int64(len(src)) > left:
		return nil, limitsError(hcl.Diagnostics{configTooLarge(path, nfiles, "more than "+byteCount(MaxConfigSize))}, nil), nil
	}
	return src, nil, nil
}

// notRegular refuses a configuration file that is a FIFO, a device, a
// socket or a directory, naming what it is.
func notRegular(path string, mode fs.FileMode) *Error {
	kind := fileKind(mode)
	r := hcl.Range{Filename: path, Start: hcl.InitialPos, End: hcl.InitialPos}
	return &Error{Diagnostics: hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Configuration file is not a regular file",
		Detail: fmt.Sprintf("This is %s; podsup reads its configuration from regular files only (a symlink to one is followed), so that nothing can block or flood a reload. Remove it from the configuration's paths or replace it with a file.",
			kind),
		Subject: &r,
	}}}
}

// fileKind names the kind of file mode is for a message: "a named pipe
// (FIFO)", "a regular file".
func fileKind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// Parse decodes and validates an HCL configuration; filename is used in
// positions, and its directory is where relative env_file paths start. A
// file over the limits (MaxFileSize, MaxTokens, MaxNesting) or not UTF-8
// is refused first, with that one problem. Any problem returns a *Error
// holding all of them; on success the config has spec's back-off
// defaults filled in (X2) and has passed spec.Config.Validate.
func Parse(src []byte, filename string) (*spec.Config, error) {
	return Options{}.parse([]source{{name: filename, src: src}})
}

func parse(src []byte, filename string, lookupEnv func(string) (string, bool)) (*spec.Config, error) {
	return Options{LookupEnv: lookupEnv}.parse([]source{{name: filename, src: src}})
}

// source is one configuration file's name and bytes.
type source struct {
	name string
	src  []byte
}

// parse decodes srcs as one configuration: their top-level blocks are
// taken in order, as if the files were one.
func (o Options) parse(srcs []source) (*spec.Config, error) {
	o = o.withDefaults()
	files := map[string]*hcl.File{}
	var bodies []hcl.Body
	var diags hcl.Diagnostics
	tokens, left := 0, int64(MaxConfigSize)
	for _, s := range srcs {
		ld, n, splits := checkLimits(s.src, s.name, tokens, chunkSize)
		if ld.HasErrors() {
			return nil, limitsError(ld, s.src)
		}
		tokens += n
		if left -= int64(len(s.src)); left < 0 {
			return nil, limitsError(hcl.Diagnostics{configTooLarge(s.name, len(srcs), "more than "+byteCount(MaxConfigSize))}, nil)
		}
		file, fd := parseFile(s.src, s.name, splits)
		files[s.name] = file
		diags = append(diags, fd...)
		bodies = append(bodies, file.Body)
	}
	if diags.HasErrors() {
		// A syntax error leaves a partial tree: decoding it would only add
		// confusing follow-on errors.
		return nil, newError(diags, files, 0)
	}
	d := &decoder{
		ctx: &hcl.EvalContext{Functions: map[string]function.Function{
			"env": envFunction(o.LookupEnv),
		}},
		opts:   o,
		files:  files,
		diags:  diags,
		ranges: map[string][]location{},
		bad:    map[string]bool{},
		seen:   map[string]int{},
		tokens: tokens,
		left:   left,
		nfiles: len(srcs) + len(o.VarFiles),
		order:  fileOrder(srcs),
	}
	fallback := hcl.Range{Filename: "(no configuration file)"}
	if len(bodies) > 0 {
		fallback = bodies[0].MissingItemRange()
	}
	cfg := d.file(hcl.MergeBodies(bodies))
	if d.overLimit {
		// The rest is not decoded: its errors would only hide this one.
		return nil, newError(d.diags, files, d.omitted)
	}
	if es, ok := spec.AsErrors(cfg.Validate()); ok {
		d.diags = append(d.diags, d.locate(es, fallback)...)
	}
	if d.diags.HasErrors() {
		sortDiagnostics(d.diags, fileOrder(srcs))
		return nil, newError(d.diags, files, d.omitted)
	}
	return cfg, nil
}

// limitsError is a file refused before parsing, with its source for the
// snippet unless the line to show is too long to print (100,000 brackets
// on one line).
func limitsError(diags hcl.Diagnostics, src []byte) *Error {
	files := map[string]*hcl.File{}
	if d := diags[0]; d.Subject != nil && src != nil {
		at := d.Subject.Start.Byte
		lineStart := bytes.LastIndexByte(src[:at], '\n') + 1
		lineEnd := bytes.IndexByte(src[at:], '\n')
		if lineEnd < 0 {
			lineEnd = len(src) - at
		}
		if at+lineEnd-lineStart <= 200 {
			files[d.Subject.Filename] = &hcl.File{Bytes: src}
		}
	}
	return &Error{Diagnostics: diags, Files: files}
}

// locate turns spec's field errors into diagnostics at the attribute or
// block their path names, or at the nearest enclosing block that was
// written (a missing `command` is reported at its process block). Errors
// on a path whose value the decoder already rejected are dropped.
//
// Two blocks with the same name share a spec path. spec validates in file
// order and reports a duplicate just before checking the block it names,
// so a "duplicate" error moves that path on to its next occurrence.
func (d *decoder) locate(es spec.Errors, fallback hcl.Range) hcl.Diagnostics {
	var out hcl.Diagnostics
	current := map[string]int{} // keyed like decoder.seen: occurrence being checked
	for _, fe := range es {
		duplicate := strings.HasPrefix(fe.Msg, "duplicate")
		if duplicate && isNamedBlock(fe.Path) {
			n := len(fe.Path)
			k := pathKey(at(d.qualify(fe.Path[:n-2], current), fe.Path[n-2:]...))
			current[k] = min(current[k]+1, max(d.seen[k]-1, 0))
		}
		q := d.qualify(fe.Path, current)
		if d.bad[pathKey(q)] {
			continue
		}
		loc := location{subject: fallback}
		for n := len(q); n > 0; n-- {
			if locs := d.ranges[pathKey(q[:n])]; len(locs) > 0 {
				loc = locs[0]
				break
			}
		}
		detail := fe.Msg + "."
		if duplicate && isNamedBlock(fe.Path) {
			first := d.qualify(fe.Path, map[string]int{})
			if locs := d.ranges[pathKey(first)]; len(locs) > 0 && locs[0].subject != loc.subject {
				detail += fmt.Sprintf(" The first is at %s.", position(locs[0].subject))
			}
		}
		out = append(out, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summaryFor(fe.Path),
			Detail:   detail,
			Subject:  loc.subject.Ptr(),
			Context:  loc.context,
		})
	}
	return out
}

// isNamedBlock reports whether path ends in a group, init or process name.
func isNamedBlock(path []string) bool {
	n := len(path)
	return n >= 2 && (path[n-2] == "group" && n == 2 || (path[n-2] == "process" || path[n-2] == "init") && n == 4)
}

// qualify turns a spec path into the decoder's, marking each group and
// process name with the occurrence being checked. current is keyed like
// decoder.seen: the qualified parent path, the kind and the bare name.
func (d *decoder) qualify(path []string, current map[string]int) []string {
	out := make([]string, len(path))
	copy(out, path)
	for i := 1; i < len(path); i++ {
		kw := path[i-1]
		if (i == 1 && kw == "group") || (i == 3 && (kw == "process" || kw == "init")) {
			n := current[pathKey(out[:i+1])]
			out[i] = path[i] + occurrenceMark + strconv.Itoa(n)
		}
	}
	return out
}

// summaryFor names what is wrong: `Invalid success_threshold`, or for a
// block path such as [group web process api], `Invalid process "api"`.
func summaryFor(path []string) string {
	n := len(path)
	switch {
	case n == 0:
		return "Invalid configuration"
	case n >= 2 && (path[n-2] == "group" || path[n-2] == "process" || path[n-2] == "init"):
		return fmt.Sprintf("Invalid %s %q", path[n-2], path[n-1])
	case n >= 2 && path[n-2] == "mount":
		return "Invalid mount"
	case n >= 2 && path[n-2] == "depends_on":
		return fmt.Sprintf("Invalid depends_on %q", path[n-1])
	default:
		return "Invalid " + path[n-1]
	}
}

// sortDiagnostics orders diagnostics by position, so that decoding errors
// and validation errors read in file order: the configuration files in
// the order they were loaded (order), then any other (a var file) by name.
func sortDiagnostics(diags hcl.Diagnostics, order map[string]int) {
	rank := func(name string) int {
		if n, ok := order[name]; ok {
			return n
		}
		return len(order)
	}
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		if a == nil || b == nil {
			return a != nil && b == nil
		}
		if ra, rb := rank(a.Filename), rank(b.Filename); ra != rb {
			return ra < rb
		}
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
}

// position is a range's start as file:line:col.
func position(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}
