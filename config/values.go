package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// ParseDuration parses a Go duration string ("10s", "1m30s", "100ms"),
// saying what to write instead when s is not one. A bare number is
// rejected: "10" could mean seconds or nanoseconds, so the unit is required.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err == nil {
		return d, nil
	}
	if _, numErr := strconv.ParseFloat(strings.TrimSpace(s), 64); numErr == nil && s != "0" {
		return 0, fmt.Errorf("%q has no unit: write a duration such as \"%ss\" or \"%sms\"", s, strings.TrimSpace(s), strings.TrimSpace(s))
	}
	return 0, fmt.Errorf("%q is not a duration: write a Go duration such as \"10s\", \"1m30s\" or \"100ms\"", s)
}

// sizeUnits are the suffixes ParseSize accepts, case-insensitively:
// decimal (K, M, G, T, optionally followed by B) and binary (Ki, Mi, Gi,
// Ti, optionally followed by B), as in Kubernetes quantities.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}

// sizeUnitsText lists sizeUnits for error messages, in the words of
// docs/config.md ("Types"), which a test holds to the same list.
const sizeUnitsText = "K, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024), each optionally followed by B, in any case, or none for bytes"

// ParseSize parses a byte size: "256MiB", "1G", "1.5Gi", "4096".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return unicode.IsLetter(r) })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), t[i:]
	}
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q: use "+sizeUnitsText+", e.g. \"256Mi\" or \"1G\"", s, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size: write a number of bytes or a number with a unit, e.g. \"256MiB\" or \"1G\"", s)
	}
	return sizeFromFloat(f * mult)
}

func sizeFromFloat(f float64) (int64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %g is out of range", f)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("size %g is not a whole number of bytes", f)
	}
	return int64(f), nil
}

// envFunction is HCL's env("NAME", "default"): the value of an environment
// variable, the default when it is unset, and an error naming the variable
// when it is unset and there is no default. lookup is os.LookupEnv outside
// tests.
func envFunction(lookup func(string) (string, bool)) function.Function {
	return function.New(&function.Spec{
		Description: "The value of an environment variable, or the default when it is unset.",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam:    &function.Parameter{Name: "default", Type: cty.String},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 2 {
				return cty.NilVal, function.NewArgErrorf(2, "env takes a name and at most one default, e.g. env(\"PORT\", \"8080\")")
			}
			name := args[0].AsString()
			if v, ok := lookup(name); ok {
				return cty.StringVal(v), nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return cty.NilVal, function.NewArgErrorf(0, "environment variable %q is not set and no default was given: set it, or write env(%q, \"default\")", name, name)
		},
	})
}
