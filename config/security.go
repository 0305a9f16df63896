package config

import (
	"math/big"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/podsup/podsup/spec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// security decodes the security context of a process, an init or a group
// at p: securityAttrs of as, and the capabilities and rlimits blocks.
func (d *decoder) security(as hcl.Attributes, bs map[string]hcl.Blocks, p []string) spec.Security {
	var s spec.Security
	d.optBool(as, p, "run_as_non_root", &s.RunAsNonRoot)
	d.strList(as, p, "supplemental_groups", `["video", "1001"]`, &s.SupplementalGroups)
	var umask string
	if d.str(as, p, "umask", &umask) {
		if m, err := spec.ParseUmask(umask); err != nil {
			d.invalid(at(p, "umask"), as["umask"], "umask must be an octal mode in a string, from \"0000\" to \"0777\", e.g. umask = \"0027\"; got %q.", umask)
		} else {
			s.Umask = &m
		}
	}
	d.optBool(as, p, "privileged", &s.Privileged)
	d.optBool(as, p, "no_new_privileges", &s.NoNewPrivileges)
	d.str(as, p, "seccomp", &s.Seccomp)
	if n, ok := d.integer(as, p, "oom_score_adj"); ok {
		v := int(max(min(n, 1<<20), -1<<20)) // validation says the range
		s.OOMScoreAdj = &v
	}
	for _, b := range bs["capabilities"] {
		cp := at(p, "capabilities")
		d.block(b, cp)
		cas, _ := d.content(b.Body, capabilitiesSchema, cp)
		s.Capabilities = &spec.Capabilities{}
		d.strList(cas, cp, "add", `["NET_BIND_SERVICE"]`, &s.Capabilities.Add)
		d.strList(cas, cp, "drop", `["ALL"]`, &s.Capabilities.Drop)
	}
	for _, b := range bs["rlimits"] {
		rp := at(p, "rlimits")
		d.block(b, rp)
		ras, _ := d.content(b.Body, rlimitsSchema, rp)
		for _, name := range spec.RlimitNames {
			if r, ok := d.rlimit(ras, rp, name); ok {
				if s.Rlimits == nil {
					s.Rlimits = map[string]spec.Rlimit{}
				}
				s.Rlimits[name] = r
			}
		}
	}
	return s
}

// optBool decodes a bool whose absence means "the default" (nil).
func (d *decoder) optBool(as hcl.Attributes, p []string, name string, dst **bool) {
	v, a, ok := d.value(as, p, name)
	if !ok {
		return
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil {
		d.invalid(at(p, name), a, "%s must be true or false; got %s.", name, v.Type().FriendlyName())
		return
	}
	t := b.True()
	*dst = &t
}

// rlimit decodes one limit: a whole number for soft and hard, or a string
// "SOFT:HARD", each side a number or "infinity".
func (d *decoder) rlimit(as hcl.Attributes, p []string, name string) (spec.Rlimit, bool) {
	v, a, ok := d.value(as, p, name)
	if !ok {
		return spec.Rlimit{}, false
	}
	bad := func() (spec.Rlimit, bool) {
		d.invalid(at(p, name), a, "%s must be a limit: a whole number for both the soft and the hard limit, or a string \"SOFT:HARD\" whose sides are numbers or \"infinity\", e.g. %s = 1024 or %s = \"1024:4096\"; got %s.", name, name, name, friendly(v))
		return spec.Rlimit{}, false
	}
	if v.Type() == cty.Number {
		f := v.AsBigFloat()
		n, acc := f.Uint64()
		if acc != big.Exact || !f.IsInt() {
			return bad()
		}
		return spec.Rlimit{Soft: n, Hard: n}, true
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil {
		return bad()
	}
	r, err := spec.ParseRlimit(sv.AsString())
	if err != nil {
		return bad()
	}
	return r, true
}

func friendly(v cty.Value) string {
	if v.Type() == cty.String {
		return strconv.Quote(v.AsString())
	}
	return v.Type().FriendlyName()
}
