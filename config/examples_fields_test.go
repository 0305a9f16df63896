package config

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// blockSchemaName is the schema a block of each type is read with, where
// it differs from the type: the probes share one, the hooks another, and
// an init is read as a process.
var blockSchemaName = map[string]string{
	"startup_probe": "probe", "liveness_probe": "probe", "readiness_probe": "probe",
	"pre_start": "hook", "post_start": "hook", "pre_stop": "hook", "post_stop": "hook",
	"init": "process",
}

// TestEveryFieldIsInAnExample holds README's promise "every field is shown
// in examples/": each argument and block of every block the configuration
// takes (config's schemas, the list docs/config.md is checked against)
// appears in some examples/*.hcl or examples/conf.d/*.hcl, in a block of
// its kind.
func TestEveryFieldIsInAnExample(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.hcl")
	more, _ := filepath.Glob("../examples/conf.d/*.hcl")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found %d examples: %v", len(files), files)
	}
	seen := map[string]bool{} // "schema.field"
	var walk func(schema string, body *hclsyntax.Body)
	walk = func(schema string, body *hclsyntax.Body) {
		for name := range body.Attributes {
			seen[schema+"."+name] = true
		}
		for _, b := range body.Blocks {
			seen[schema+"."+b.Type] = true
			inner := b.Type
			if n, ok := blockSchemaName[b.Type]; ok {
				inner = n
			}
			walk(inner, b.Body)
		}
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", f, diags)
		}
		walk("top-level", file.Body.(*hclsyntax.Body))
	}
	var missing []string
	for _, s := range schemas {
		// The limits of an rlimits block are one form, sixteen names:
		// an example of one shows them all.
		anyLimit := false
		for _, a := range rlimitsSchema.schema.Attributes {
			anyLimit = anyLimit || seen["rlimits."+a.Name]
		}
		for _, a := range s.schema.Attributes {
			if s == rlimitsSchema && anyLimit {
				continue
			}
			if !seen[s.name+"."+a.Name] {
				missing = append(missing, s.name+"."+a.Name)
			}
		}
		for _, b := range s.schema.Blocks {
			if !seen[s.name+"."+b.Type] {
				missing = append(missing, s.name+"."+b.Type)
			}
		}
	}
	sort.Strings(missing)
	missing = slices.Compact(missing)
	if len(missing) > 0 {
		t.Errorf("README says every field is shown in examples/; these are in none: %v", missing)
	}
}
