package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// MaxEnvFileSize is the largest environment file podsup reads. Linux
// refuses an environment over a quarter of the stack limit (2 MiB by
// default) at exec, so a larger file could never start its process.
const MaxEnvFileSize = 1 << 20

// envVar is one KEY=VALUE of an environment file.
type envVar struct {
	key, value string
}

// envFileError is a line of an environment file that is not KEY=VALUE.
// Its message never quotes the value: environment files hold secrets.
type envFileError struct {
	line int
	msg  string
}

func (e *envFileError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// parseEnvFile reads an environment file in the format docker compose's
// env_file and systemd's EnvironmentFile= share:
//
//   - one KEY=VALUE per line; blank lines and lines starting with # or ;
//     are skipped; an "export " prefix is accepted and ignored;
//   - a value in single quotes is literal; one in double quotes takes the
//     escapes \n, \t, \r, \\, \" and \$ (any other backslash is kept); a
//     quoted value may span lines;
//   - an unquoted value runs to the end of the line, without surrounding
//     blanks and without a comment that starts with " #";
//   - $ is never expanded: ${OTHER} is those characters.
//
// A later KEY overrides an earlier one, as in a shell.
func parseEnvFile(src []byte) ([]envVar, error) {
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return nil, &envFileError{line: 1 + bytes.Count(src[:i], []byte("\n")), msg: "contains a NUL byte, which an environment cannot hold"}
	}
	p := envParser{src: src, line: 1}
	var out []envVar
	for {
		p.skipBlanks()
		if p.eof() {
			return out, nil
		}
		switch p.src[p.at] {
		case '\n':
			p.newline()
			continue
		case '#', ';':
			p.skipLine()
			continue
		}
		v, err := p.assignment()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// envParser walks an environment file byte by byte, counting lines.
type envParser struct {
	src  []byte
	at   int
	line int
}

func (p *envParser) eof() bool { return p.at >= len(p.src) }

func (p *envParser) newline() { p.at++; p.line++ }

func (p *envParser) skipBlanks() {
	for !p.eof() && (p.src[p.at] == ' ' || p.src[p.at] == '\t' || p.src[p.at] == '\r') {
		p.at++
	}
}

func (p *envParser) skipLine() {
	for !p.eof() && p.src[p.at] != '\n' {
		p.at++
	}
}

func (p *envParser) fail(line int, format string, args ...any) error {
	return &envFileError{line: line, msg: fmt.Sprintf(format, args...)}
}

// assignment reads KEY=VALUE (after an optional "export ") and the rest of
// its last line.
func (p *envParser) assignment() (envVar, error) {
	line := p.line
	rest := p.src[p.at:]
	if bytes.HasPrefix(rest, []byte("export")) && len(rest) > 6 && (rest[6] == ' ' || rest[6] == '\t') {
		p.at += 6
		p.skipBlanks()
	}
	start := p.at
	for !p.eof() && p.src[p.at] != '=' && p.src[p.at] != '\n' {
		p.at++
	}
	if p.eof() || p.src[p.at] != '=' {
		return envVar{}, p.fail(line, "expected KEY=VALUE")
	}
	key := string(bytes.TrimRight(p.src[start:p.at], " \t"))
	if !validEnvName(key) {
		return envVar{}, p.fail(line, "%q is not a variable name: use letters, digits, _ . and -, not starting with a digit", key)
	}
	p.at++ // '='
	p.skipBlanks()
	var value string
	var err error
	switch {
	case p.eof():
	case p.src[p.at] == '\'' || p.src[p.at] == '"':
		value, err = p.quoted(p.src[p.at])
		if err == nil {
			err = p.endOfValue()
		}
	default:
		value = p.unquoted()
	}
	return envVar{key: key, value: value}, err
}

// quoted reads a value between quote characters, which may span lines.
func (p *envParser) quoted(quote byte) (string, error) {
	opened := p.line
	p.at++
	var b []byte
	for !p.eof() {
		c := p.src[p.at]
		switch {
		case c == quote:
			p.at++
			return string(b), nil
		case c == '\\' && quote == '"' && p.at+1 < len(p.src):
			b = append(b, unescape(p.src[p.at+1])...)
			if p.src[p.at+1] == '\n' {
				p.line++
			}
			p.at += 2
			continue
		case c == '\n':
			p.line++
		}
		b = append(b, c)
		p.at++
	}
	return "", p.fail(opened, "the quote opened on this line is never closed")
}

// unescape is what a backslash and c stand for in double quotes.
func unescape(c byte) []byte {
	switch c {
	case 'n':
		return []byte{'\n'}
	case 't':
		return []byte{'\t'}
	case 'r':
		return []byte{'\r'}
	case '\\', '"', '$':
		return []byte{c}
	}
	return []byte{'\\', c}
}

// endOfValue accepts only blanks or a comment after a closing quote.
func (p *envParser) endOfValue() error {
	p.skipBlanks()
	if p.eof() || p.src[p.at] == '\n' {
		return nil
	}
	if p.src[p.at] == '#' {
		p.skipLine()
		return nil
	}
	return p.fail(p.line, "unexpected text after the closing quote")
}

// unquoted reads to the end of the line, stopping at a " #" comment.
func (p *envParser) unquoted() string {
	start := p.at
	p.skipLine()
	v := p.src[start:p.at]
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			v = v[:i]
			break
		}
	}
	return string(bytes.TrimRight(v, " \t\r"))
}

// validEnvName accepts the names docker compose does: letters, digits,
// '_', '.' and '-', not starting with a digit.
func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// errNotRegular refuses a FIFO, device or directory as an environment
// file: reading one could block a reload for ever or never end.
var errNotRegular = errors.New("not a regular file")

// readEnvFile reads an environment file of at most MaxEnvFileSize bytes.
// It opens without blocking (a FIFO would block open(2)) and refuses
// anything but a regular file.
func readEnvFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	if fi.Size() > MaxEnvFileSize {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d an environment file may have", path, fi.Size(), MaxEnvFileSize)
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxEnvFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxEnvFileSize {
		return nil, fmt.Errorf("%s is more than the %d bytes an environment file may have", path, MaxEnvFileSize)
	}
	return src, nil
}

// environment is a group's or process's environment: base (the group's,
// for a process) overlaid with each file of env_file in order, then with
// env. So a process's own settings win over its group's, and within a
// block, env wins over the files and a later file over an earlier one.
func (d *decoder) environment(as hcl.Attributes, p []string, base map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, f := range d.envFiles(as, p) {
		for _, v := range d.readEnv(f) {
			out[v.key] = v.value
		}
	}
	var inline map[string]string
	d.strMap(as, p, "env", &inline)
	for k := range inline {
		if k == "" || strings.ContainsRune(k, '=') {
			d.badEnvKey(as["env"], at(p, "env"), k)
			delete(inline, k)
		}
	}
	maps.Copy(out, inline)
	return out
}

// badEnvKey refuses an env key that is empty or holds an "=": the process
// would get another variable than the one written (A=B = "c" is A, set to
// "B=c"). The error points at the key when the map is written out.
func (d *decoder) badEnvKey(a *hcl.Attribute, p []string, key string) {
	subject := a.Expr.Range()
	if o, ok := a.Expr.(*hclsyntax.ObjectConsExpr); ok {
		for _, item := range o.Items {
			if k, diags := item.KeyExpr.Value(d.ctx); !diags.HasErrors() && k.Type() == cty.String && k.IsKnown() && !k.IsNull() && k.AsString() == key {
				subject = item.KeyExpr.Range()
			}
		}
	}
	what := "is empty"
	if key != "" {
		what = "contains \"=\""
	}
	d.errorAt(p, subject.Ptr(), a.Range.Ptr(), "Invalid env", fmt.Sprintf("The variable name %q %s: the process would get another variable than the one written. A name is letters, digits and _ (and . or -), e.g. LOG_LEVEL.", key, what))
}

// envFileRef is one entry of env_file: the file's path, resolved against
// the directory of the configuration file that names it, and where the
// entry is written.
type envFileRef struct {
	path     string
	optional bool
	at       hcl.Range
	context  *hcl.Range
}

// envFiles decodes env_file: a list of paths (or one path), each optional
// when it starts with "-", as in systemd's EnvironmentFile=.
func (d *decoder) envFiles(as hcl.Attributes, p []string) []envFileRef {
	v, a, ok := d.value(as, p, "env_file")
	if !ok {
		return nil
	}
	var names []string
	if v.Type() == cty.String {
		names = []string{v.AsString()}
	} else if !d.strListValue(v, a, at(p, "env_file"), `["app.env", "-optional.env"]`, &names) {
		return nil
	}
	// Point at the entry when the list is written out, else at the whole
	// expression (a variable, a function call).
	var elems []hclsyntax.Expression
	if t, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok && len(t.Exprs) == len(names) {
		elems = t.Exprs
	}
	dir := filepath.Dir(a.Range.Filename)
	var out []envFileRef
	for i, name := range names {
		ref := envFileRef{at: a.Expr.Range(), context: a.Range.Ptr()}
		if elems != nil {
			ref.at = elems[i].Range()
		}
		ref.optional = strings.HasPrefix(name, "-")
		ref.path = strings.TrimPrefix(name, "-")
		if ref.path == "" {
			d.errorAt(at(p, "env_file"), ref.at.Ptr(), ref.context, "Invalid env_file", "An env_file entry is empty: give a file's path, e.g. \"app.env\", or \"-app.env\" for an optional file.")
			continue
		}
		if hasNUL(ref.path) {
			d.errorAt(at(p, "env_file"), ref.at.Ptr(), ref.context, "Invalid env_file", "An env_file entry contains a NUL byte (\\u0000), which no path can hold.")
			continue
		}
		if !filepath.IsAbs(ref.path) {
			ref.path = filepath.Join(dir, ref.path)
		}
		out = append(out, ref)
	}
	return out
}

// readEnv reads and parses one env file; a problem is a diagnostic at the
// env_file entry, naming the file and its line, never a value.
func (d *decoder) readEnv(f envFileRef) []envVar {
	src, err := d.opts.readEnvFile(f.path)
	if err != nil {
		if f.optional && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read env file",
			Detail:  fmt.Sprintf("%s. A relative path starts at the directory of the file that names it; a path starting with - names an optional file.", err),
			Subject: f.at.Ptr(), Context: f.context})
		return nil
	}
	vars, err := parseEnvFile(src)
	if err != nil {
		var le *envFileError
		if errors.As(err, &le) {
			err = fmt.Errorf("%s:%d: %s", f.path, le.line, le.msg)
		}
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid env file",
			Detail:  fmt.Sprintf("%s. Each line is KEY=VALUE, a # comment or blank.", err),
			Subject: f.at.Ptr(), Context: f.context})
		return nil
	}
	return vars
}
