package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// VarEnvPrefix starts the environment variables that set a configuration
// variable: PODSUP_VAR_port=8080 sets var.port.
const VarEnvPrefix = "PODSUP_VAR_"

// variable is a declared `variable "name" {}` block and its value so far.
type variable struct {
	block *hcl.Block
	value cty.Value
	set   bool // a default or a setting gave it a value
}

// variables decodes the variable blocks and gives each its value, from
// the lowest precedence to the highest, as Terraform and Nomad do: the
// default, then PODSUP_VAR_name, then each var file in order, then each
// --var in order. It returns the object `var` stands for in expressions.
// A variable left without a value, and a setting for a variable no block
// declares, is an error naming it.
func (d *decoder) variables(blocks hcl.Blocks) cty.Value {
	vars := map[string]*variable{}
	var order []string
	for _, b := range blocks {
		name := b.Labels[0]
		p := []string{"variable", name}
		if !hclsyntax.ValidIdentifier(name) {
			d.errorAt(p, b.LabelRanges[0].Ptr(), b.DefRange.Ptr(), "Invalid variable name",
				fmt.Sprintf("%q is not a valid name: use letters, digits, _ and -, starting with a letter, e.g. variable \"http_port\".", name))
			continue
		}
		if first, ok := vars[name]; ok {
			d.errorAt(p, b.DefRange.Ptr(), nil, "Duplicate variable",
				fmt.Sprintf("Variable %q is declared twice; the first is at %s. Remove one.", name, position(first.block.DefRange)))
			continue
		}
		d.block(b, p)
		as, _ := d.content(b.Body, variableSchema, p)
		v := &variable{block: b}
		var description string
		d.str(as, p, "description", &description)
		if a := as["default"]; a != nil {
			if val, ok := d.rawValue(a, at(p, "default")); ok {
				v.value, v.set = val, true
			}
		}
		vars[name] = v
		order = append(order, name)
	}
	for _, name := range order {
		if s, ok := d.opts.LookupEnv(VarEnvPrefix + name); ok {
			vars[name].value, vars[name].set = cty.StringVal(s), true
		}
	}
	for _, path := range d.opts.VarFiles {
		d.varFile(path, vars)
	}
	for _, kv := range d.opts.Vars {
		d.varFlag(kv, vars)
	}
	out := map[string]cty.Value{}
	for _, name := range order {
		v := vars[name]
		if !v.set {
			d.errorAt([]string{"variable", name}, v.block.DefRange.Ptr(), nil, "No value for variable",
				fmt.Sprintf("Variable %q has no default and was not set: give it one with --var %s=VALUE, in a --var-file, or with the environment variable %s%s, or write a default in its block.", name, name, VarEnvPrefix, name))
			v.value = cty.DynamicVal
		}
		out[name] = v.value
	}
	return cty.ObjectVal(out)
}

// rawValue evaluates an attribute of any type, recording where it is.
func (d *decoder) rawValue(a *hcl.Attribute, p []string) (cty.Value, bool) {
	d.record(p, location{subject: a.Expr.Range(), context: a.Range.Ptr()})
	v, diags := a.Expr.Value(d.ctx)
	if diags.HasErrors() {
		d.bad[pathKey(p)] = true
		d.diags = append(d.diags, diags...)
		return cty.NilVal, false
	}
	return v, true
}

// varFile sets variables from an HCL file of NAME = value attributes.
// Values are literals: a var file has no variables or functions.
func (d *decoder) varFile(path string, vars map[string]*variable) {
	src, limitErr, err := readConfigFile(path, d.left, d.nfiles)
	if err == nil && limitErr != nil {
		d.diags = append(d.diags, limitErr.Diagnostics...)
		return
	}
	if err != nil {
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read var file",
			Detail: fmt.Sprintf("--var-file %s: %s.", path, err)})
		return
	}
	ld, n, _ := checkLimits(src, path, d.tokens, 0)
	if ld.HasErrors() {
		d.diags = append(d.diags, ld...)
		return
	}
	d.tokens += n
	d.left -= int64(len(src))
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	d.files[path] = file
	if diags.HasErrors() {
		d.diags = append(d.diags, diags...)
		return
	}
	attrs, diags := file.Body.JustAttributes()
	d.diags = append(d.diags, diags...)
	for _, a := range sortedAttributes(attrs) {
		v, ok := vars[a.Name]
		if !ok {
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
				Detail:  fmt.Sprintf("No variable %q is declared in the configuration: declare it with variable %q {}, or remove it from the var file.", a.Name, a.Name),
				Subject: a.NameRange.Ptr(), Context: a.Range.Ptr()})
			continue
		}
		val, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			d.diags = append(d.diags, diags...)
			continue
		}
		v.value, v.set = val, true
	}
}

// varFlag sets a variable from a NAME=VALUE (--var); the value is a string.
func (d *decoder) varFlag(kv string, vars map[string]*variable) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid --var",
			Detail: fmt.Sprintf("--var %q is not NAME=VALUE: write e.g. --var http_port=8080.", name)})
		return
	}
	v, declared := vars[name]
	if !declared {
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
			Detail: fmt.Sprintf("--var %s=...: no variable %q is declared in the configuration; declare it with variable %q {}.", name, name, name)})
		return
	}
	v.value, v.set = cty.StringVal(value), true
}

// sortedAttributes is attrs in the order they are written.
func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}
