package config

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// chunkSize is about how many bytes of a file HCL's parser is given at
// once. hclsyntax lexes a whole source into one slice of ~100-byte tokens
// before it parses, growing it by appending: a 4 MiB file of 10,000
// groups allocated 580 MB of token slices, and held up to twice the final
// slice at once, to build a tree that needs a fraction of that. podsup
// hands it the file a run of top-level blocks at a time instead, so the
// tokens alive at once are a chunk's.
const chunkSize = 64 << 10

// parseFile parses one configuration file, as hclsyntax.ParseConfig would,
// a chunk of whole top-level items at a time, cut at splits (checkLimits
// finds them, about chunkSize bytes apart), and joins the chunks' bodies
// into the file's body. Positions are the file's: each chunk is parsed
// from where it starts.
func parseFile(src []byte, filename string, splits []int) (*hcl.File, hcl.Diagnostics) {
	if len(splits) == 0 {
		return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	// The empty file's body is its navigation's root too: filled in below,
	// the diagnostics' "in group ..." context still works.
	file, _ := hclsyntax.ParseConfig(nil, filename, hcl.InitialPos)
	root := file.Body.(*hclsyntax.Body)
	root.Attributes = hclsyntax.Attributes{}
	var diags hcl.Diagnostics
	pos := hcl.InitialPos
	start := 0
	for i := 0; i <= len(splits); i++ {
		end := len(src)
		if i < len(splits) {
			end = splits[i]
		}
		f, d := hclsyntax.ParseConfig(src[start:end], filename, pos)
		diags = append(diags, d...)
		body := f.Body.(*hclsyntax.Body)
		for _, a := range sortedSyntaxAttributes(body.Attributes) {
			if prev, ok := root.Attributes[a.Name]; ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Attribute redefined",
					Detail:  fmt.Sprintf("The argument %q was already set at %s. Each argument may be set only once.", a.Name, prev.NameRange),
					Subject: a.NameRange.Ptr()})
				continue
			}
			root.Attributes[a.Name] = a
		}
		root.Blocks = append(root.Blocks, body.Blocks...)
		root.EndRange = body.EndRange
		pos.Line += bytes.Count(src[start:end], []byte("\n"))
		pos.Byte = end
		start = end
	}
	root.SrcRange = hcl.Range{Filename: filename, Start: hcl.InitialPos, End: root.EndRange.End}
	file.Bytes = src
	return file, diags
}

// sortedSyntaxAttributes are a chunk's attributes in file order, so that a
// duplicate is reported at the later one as HCL does.
func sortedSyntaxAttributes(attrs hclsyntax.Attributes) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].SrcRange.Start.Byte < out[j-1].SrcRange.Start.Byte; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
