// Package deps pins the project's chosen dependencies in go.mod while the
// packages that use them are being written. Delete it once each is imported
// for real.
package deps

import (
	_ "github.com/coreos/go-systemd/v22/activation"
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/go-systemd/v22/journal"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/hcl/v2/hclsyntax"
	_ "github.com/rs/zerolog"
	_ "github.com/spf13/cobra"
	_ "github.com/zclconf/go-cty/cty/function"
	_ "golang.org/x/sys/unix"
)
