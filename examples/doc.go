// Package examples holds podsup's example configurations: real, runnable
// HCL files (see each file's header for what it shows and how to run it).
// FS embeds them so that tests elsewhere can load them too.
package examples

import "embed"

// FS holds every examples/*.hcl file and the conf.d directory.
//
//go:embed *.hcl conf.d
var FS embed.FS
