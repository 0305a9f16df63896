package config

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/podsup/podsup/spec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// decoder turns HCL bodies into spec values. It never stops at the first
// problem: every diagnostic goes into diags, and every attribute and block
// it meets leaves its source range in ranges under its spec path, so that
// spec's validation errors can be pointed back at the file.
type decoder struct {
	ctx  *hcl.EvalContext
	opts Options
	// files are the parsed sources, for snippets; a var file joins them.
	files  map[string]*hcl.File
	diags  hcl.Diagnostics
	ranges map[string][]location
	// bad holds the paths whose value could not be decoded: spec's
	// validation would only repeat the problem in vaguer words.
	bad map[string]bool
	// seen counts the blocks written under each path, so that two groups
	// (or processes) with the same name keep apart: the decoder's paths
	// carry the occurrence (see qualify), spec's paths do not.
	seen map[string]int

	// What is left of the configuration's limits for the var files: the
	// tokens scanned so far, the bytes left of MaxConfigSize, the number
	// of files (for messages).
	tokens int
	left   int64
	nfiles int
	// processes counts the process and init blocks decoded, against
	// MaxProcesses; overLimit is set when the configuration is over
	// MaxGroups or MaxProcesses, and decoding stops.
	processes int
	overLimit bool
	// groupSandbox is the sandbox of the group being decoded, whose named
	// ports probes and hooks may use; nil outside a group.
	groupSandbox *spec.Sandbox
	// omitted counts the problems dropped past keptDiagnostics; order
	// ranks the files for sortDiagnostics.
	omitted int
	order   map[string]int
}

// keptDiagnostics is how many problems the decoder keeps, of which the
// first MaxDiagnostics in file order are reported (more than that, as the
// decoder does not find them in file order).
const keptDiagnostics = 10 * MaxDiagnostics

// occurrenceMark separates a name from its occurrence number in the
// decoder's paths; it cannot appear in a valid name.
const occurrenceMark = "\x01"

// named returns path + kind + name, with the name marked by how many
// blocks of that kind and name came before under the same path.
func (d *decoder) named(path []string, kind, name string) []string {
	k := pathKey(at(path, kind, name))
	n := d.seen[k]
	d.seen[k]++
	return at(path, kind, name+occurrenceMark+strconv.Itoa(n))
}

// location is where a path was written: subject is what the error
// underlines (an attribute's value, a block's header), context the whole
// attribute.
type location struct {
	subject hcl.Range
	context *hcl.Range
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

func at(path []string, more ...string) []string {
	out := make([]string, 0, len(path)+len(more))
	return append(append(out, path...), more...)
}

func (d *decoder) record(path []string, loc location) {
	k := pathKey(path)
	d.ranges[k] = append(d.ranges[k], loc)
}

func (d *decoder) errorAt(path []string, subject, context *hcl.Range, summary, detail string) {
	d.bad[pathKey(path)] = true
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: subject, Context: context,
	})
}

// content checks body against s and returns its attributes by name and its
// blocks by type. It adds to HCL's "not expected here" errors the list of
// what is allowed when HCL found no close name to suggest, and rejects a
// second block of a kind that may appear once.
func (d *decoder) content(body hcl.Body, s *blockSchema, path []string) (hcl.Attributes, map[string]hcl.Blocks) {
	c, diags := body.Content(s.schema)
	// A body of 490,000 unknown arguments is as many problems: past
	// keptDiagnostics they are only counted, so that neither this loop's
	// work nor d.diags grows with them.
	if keep := max(keptDiagnostics-len(d.diags), 0); len(diags) > keep {
		sortDiagnostics(diags, d.order) // HCL finds them in map order
		d.omitted += len(diags) - keep
		diags = diags[:keep]
	}
	for _, diag := range diags {
		switch diag.Summary {
		case "Unsupported argument", "Unsupported block type":
			if !strings.Contains(diag.Detail, "Did you mean") {
				diag.Detail += " " + s.allowed()
			}
		case "Missing required argument":
			// HCL names the argument in the detail; mark it so spec does not
			// report the same absence again.
			for _, a := range s.schema.Attributes {
				if a.Required && strings.Contains(diag.Detail, fmt.Sprintf("%q", a.Name)) {
					d.bad[pathKey(at(path, a.Name))] = true
				}
			}
		}
	}
	d.diags = append(d.diags, diags...)
	if c == nil {
		return hcl.Attributes{}, map[string]hcl.Blocks{}
	}
	byType := c.Blocks.ByType()
	for typ, bs := range byType {
		if s.single[typ] && len(bs) > 1 {
			holder := "A " + s.name + " block takes"
			if s == fileSchema {
				holder = "A configuration, in all its files, takes"
			}
			for _, extra := range bs[1:] {
				d.errorAt(at(path, typ), extra.DefRange.Ptr(), nil, fmt.Sprintf("Duplicate %s block", typ),
					fmt.Sprintf("%s one %s block; another was defined at %s. Merge them into one.", holder, typ, position(bs[0].DefRange)))
			}
			byType[typ] = bs[:1]
		}
	}
	return c.Attributes, byType
}

// value evaluates attribute name, if present, recording its range. It
// returns false when the attribute is absent, null or broken.
func (d *decoder) value(attrs hcl.Attributes, path []string, name string) (cty.Value, *hcl.Attribute, bool) {
	a := attrs[name]
	if a == nil {
		return cty.NilVal, nil, false
	}
	p := at(path, name)
	d.record(p, location{subject: a.Expr.Range(), context: a.Range.Ptr()})
	v, diags := a.Expr.Value(d.ctx)
	if diags.HasErrors() {
		d.bad[pathKey(p)] = true
		d.diags = append(d.diags, diags...)
		return cty.NilVal, a, false
	}
	if v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, a, false
	}
	return v, a, true
}

func (d *decoder) invalid(path []string, a *hcl.Attribute, detail string, args ...any) {
	d.errorAt(path, a.Expr.Range().Ptr(), a.Range.Ptr(), fmt.Sprintf("Invalid %s", a.Name), fmt.Sprintf(detail, args...))
}

func (d *decoder) str(attrs hcl.Attributes, path []string, name string, dst *string) bool {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		d.invalid(at(path, name), a, "%s must be a string, e.g. %s = \"...\"; got %s.", name, name, v.Type().FriendlyName())
		return false
	}
	if hasNUL(s.AsString()) {
		d.invalid(at(path, name), a, "%s contains a NUL byte (\\u0000), which no path, name, argument or environment can hold: the kernel reads each as a C string, ending at the NUL.", name)
		return false
	}
	*dst = s.AsString()
	return true
}

// hasNUL reports whether s holds a NUL byte. Every string of a
// configuration ends up a C string (a path, an argument, a variable, a
// name) where a NUL would cut it short, or fail exec with "invalid
// argument" at every start.
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

func (d *decoder) strList(attrs hcl.Attributes, path []string, name, example string, dst *[]string) {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return
	}
	d.strListValue(v, a, at(path, name), example, dst)
}

// strListValue converts an attribute's value v to a list of strings.
func (d *decoder) strListValue(v cty.Value, a *hcl.Attribute, path []string, example string, dst *[]string) bool {
	name := a.Name
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || !l.IsWhollyKnown() {
		d.invalid(path, a, "%s must be a list of strings, e.g. %s = %s; got %s.", name, name, example, v.Type().FriendlyName())
		return false
	}
	var out []string
	for it := l.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			d.invalid(path, a, "%s must not contain null.", name)
			return false
		}
		if hasNUL(e.AsString()) {
			d.invalid(path, a, "%s[%d] contains a NUL byte (\\u0000), which no path, argument or name can hold: the kernel reads each as a C string, ending at the NUL.", name, len(out))
			return false
		}
		out = append(out, e.AsString())
	}
	*dst = out
	return true
}

func (d *decoder) strMap(attrs hcl.Attributes, path []string, name string, dst *map[string]string) {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return
	}
	m, err := convert.Convert(v, cty.Map(cty.String))
	if err != nil {
		d.invalid(at(path, name), a, "%s must be a map of strings, e.g. %s = { KEY = \"value\" }; got %s.", name, name, v.Type().FriendlyName())
		return
	}
	out := map[string]string{}
	for it := m.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			d.invalid(at(path, name), a, "%s[%q] must not be null.", name, k.AsString())
			return
		}
		if hasNUL(k.AsString()) || hasNUL(e.AsString()) {
			d.invalid(at(path, name), a, "%s[%q] contains a NUL byte (\\u0000) in its key or value, which no environment variable or header can hold: the kernel reads each as a C string, ending at the NUL.", name, k.AsString())
			return
		}
		out[k.AsString()] = e.AsString()
	}
	if len(out) > 0 {
		*dst = out
	}
}

func (d *decoder) boolean(attrs hcl.Attributes, path []string, name string, dst *bool) {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil {
		d.invalid(at(path, name), a, "%s must be true or false; got %s.", name, v.Type().FriendlyName())
		return
	}
	*dst = b.True()
}

func (d *decoder) number(attrs hcl.Attributes, path []string, name string) (*big.Float, *hcl.Attribute, bool) {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return nil, a, false
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		d.invalid(at(path, name), a, "%s must be a number; got %s.", name, v.Type().FriendlyName())
		return nil, a, false
	}
	return n.AsBigFloat(), a, true
}

func (d *decoder) integer(attrs hcl.Attributes, path []string, name string) (int64, bool) {
	f, a, ok := d.number(attrs, path, name)
	if !ok {
		return 0, false
	}
	i, acc := f.Int64()
	if acc != big.Exact || !f.IsInt() {
		d.invalid(at(path, name), a, "%s must be a whole number; got %s.", name, f.Text('g', -1))
		return 0, false
	}
	return i, true
}

// integerInt decodes a whole number that must fit in 32 bits: Kubernetes'
// fields are int32 (a failure_threshold of 1e15 is no threshold a probe
// can reach), and so are a port, a cpu_weight and a count of files.
func (d *decoder) integerInt(attrs hcl.Attributes, path []string, name string, dst *int) {
	i, ok := d.integer(attrs, path, name)
	if !ok {
		return
	}
	if i < math.MinInt32 || i > math.MaxInt32 {
		d.invalid(at(path, name), attrs[name], "%s must be between %d and %d (a 32-bit integer, as Kubernetes' fields are); got %d.", name, math.MinInt32, math.MaxInt32, i)
		return
	}
	*dst = int(i)
}

// maxPids is the largest pids.max the kernel takes: PID_MAX_LIMIT on a
// 64-bit system (a larger one is EINVAL at every start).
const maxPids = 4 << 20

// pids decodes resources.pids, from 0 to maxPids.
func (d *decoder) pids(attrs hcl.Attributes, path []string, name string, dst *int64) {
	i, ok := d.integer(attrs, path, name)
	if !ok {
		return
	}
	if i < 0 || i > maxPids {
		d.invalid(at(path, name), attrs[name], "%s must be from 0 to %d (the kernel's PID_MAX_LIMIT, the most pids.max takes); got %d.", name, maxPids, i)
		return
	}
	*dst = i
}

// logDir refuses a supervisor.log_dir that exists and is not a directory
// (podsup would fail to create every log file in it, at every start). One
// that does not exist yet is podsup's to create when it starts.
func (d *decoder) logDir(attrs hcl.Attributes, path []string, dir string) {
	fi, err := os.Stat(dir)
	if err != nil || fi.IsDir() {
		return
	}
	d.invalid(at(path, "log_dir"), attrs["log_dir"], "log_dir %q exists and is not a directory (it is %s): name a directory, or a path podsup may create one at.", dir, fileKind(fi.Mode()))
}

// maxCPU is the largest cpu the kernel can enforce: cpu.max takes a quota
// of at most 2^44-1 µs (the scheduler's MAX_BW) per podsup's 100 ms
// period.
const maxCPU = float64(1<<44-1) / 100_000

// cpu decodes resources.cpu: a number of CPUs, from 0 to maxCPU.
func (d *decoder) cpu(attrs hcl.Attributes, path []string, name string, dst *float64) {
	f, a, ok := d.number(attrs, path, name)
	if !ok {
		return
	}
	v, _ := f.Float64()
	if math.IsNaN(v) || v < 0 || v > maxCPU {
		d.invalid(at(path, name), a, "%s must be a number of CPUs from 0 to %d (the kernel's largest quota, 2^44-1 µs per 100 ms period); got %s.", name, int64(math.Floor(maxCPU)), f.Text('g', 6))
		return
	}
	*dst = v
}

// duration decodes a Go duration string. A bare number is an error with a
// hint: HCL numbers carry no unit and podsup will not guess one.
func (d *decoder) duration(attrs hcl.Attributes, path []string, name string) (time.Duration, bool) {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return 0, false
	}
	if v.Type() == cty.Number {
		n := v.AsBigFloat().Text('g', -1)
		d.invalid(at(path, name), a, "%s must be a duration string with a unit, e.g. %s = \"%ss\" or \"%sms\"; a bare number has no unit.", name, name, n, n)
		return 0, false
	}
	if v.Type() != cty.String {
		d.invalid(at(path, name), a, "%s must be a duration string such as \"10s\"; got %s.", name, v.Type().FriendlyName())
		return 0, false
	}
	dur, err := ParseDuration(v.AsString())
	if err != nil {
		d.invalid(at(path, name), a, "%s: %s.", name, err)
		return 0, false
	}
	return dur, true
}

func (d *decoder) durationTo(attrs hcl.Attributes, path []string, name string, dst *time.Duration) {
	if dur, ok := d.duration(attrs, path, name); ok {
		*dst = dur
	}
}

func (d *decoder) durationPtr(attrs hcl.Attributes, path []string, name string, dst **time.Duration) {
	if dur, ok := d.duration(attrs, path, name); ok {
		*dst = spec.Durp(dur)
	}
}

// size decodes a byte size: a whole number of bytes or a string with a unit.
func (d *decoder) size(attrs hcl.Attributes, path []string, name string, dst *int64) {
	v, a, ok := d.value(attrs, path, name)
	if !ok {
		return
	}
	var n int64
	var err error
	switch v.Type() {
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		n, err = sizeFromFloat(f)
	case cty.String:
		n, err = ParseSize(v.AsString())
	default:
		d.invalid(at(path, name), a, "%s must be a size such as \"256MiB\", \"1G\" or a number of bytes; got %s.", name, v.Type().FriendlyName())
		return
	}
	if err != nil {
		d.invalid(at(path, name), a, "%s: %s.", name, err)
		return
	}
	*dst = n
}

func (d *decoder) signal(attrs hcl.Attributes, path []string, name string, dst *syscall.Signal) {
	var s string
	if !d.str(attrs, path, name, &s) {
		return
	}
	sig, err := spec.ParseSignal(s)
	if err != nil {
		d.invalid(at(path, name), attrs[name], "%s: %s.", name, err)
		return
	}
	*dst = sig
}
