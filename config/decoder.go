package config

import (
	"fmt"
	"math/big"
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
}

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
	*dst = s.AsString()
	return true
}

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

func (d *decoder) integerInt(attrs hcl.Attributes, path []string, name string, dst *int) {
	if i, ok := d.integer(attrs, path, name); ok {
		*dst = int(i)
	}
}

func (d *decoder) integer64(attrs hcl.Attributes, path []string, name string, dst *int64) {
	if i, ok := d.integer(attrs, path, name); ok {
		*dst = i
	}
}

func (d *decoder) float(attrs hcl.Attributes, path []string, name string, dst *float64) {
	if f, _, ok := d.number(attrs, path, name); ok {
		*dst, _ = f.Float64()
	}
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
