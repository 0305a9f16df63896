package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the release build (scripts/release) with -ldflags "-X main.NAME=...";
// a plain `go build` in a git checkout gets revision and time from the
// VCS stamp Go adds to the binary instead.
var (
	version   = "dev"
	revision  = ""
	modified  = "" // "true" when the checkout had changes, tracked or untracked
	buildTime = "" // RFC 3339, UTC
)

// buildInfo is what `podsup version` reports.
type buildInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a checkout with uncommitted changes
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	ARM       string `json:"goarm,omitempty"`
}

// readBuildInfo combines the link-time values with what the Go toolchain
// recorded in the binary (debug.ReadBuildInfo): the link-time ones win.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Revision: revision, Time: buildTime, Modified: modified == "true",
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version // go install github.com/podsup/podsup/cmd/podsup@vX
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Revision == "" {
				b.Revision = s.Value
			}
		case "vcs.time":
			if b.Time == "" {
				b.Time = s.Value
			}
		case "vcs.modified":
			b.Modified = b.Modified || s.Value == "true"
		case "GOARM":
			b.ARM = s.Value
		}
	}
	return b
}

// String is the one-line form of --version.
func (b buildInfo) String() string {
	s := "podsup " + b.Version
	if b.Revision != "" {
		rev := b.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if b.Modified {
			rev += "+modified"
		}
		s += " (" + rev
		if b.Time != "" {
			s += ", " + b.Time
		}
		s += ")"
	}
	arch := b.Arch
	if b.ARM != "" {
		arch += "/v" + b.ARM
	}
	return s + " " + b.GoVersion + " " + b.OS + "/" + arch
}

func newVersionCmd(f *ctlFlags) *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print podsup's version, the revision it was built from, and its Go version and platform",
		Long: `Print podsup's version, the VCS revision and time it was built from (when
known), the Go version that built it, and its OS and architecture. -o json
prints the same as one JSON object, for scripts:

  {"version":"v0.3.0","revision":"<40 hex digits>","time":"2026-11-25T03:00:00Z",
   "go_version":"go1.26.8","os":"linux","arch":"arm64"}

"modified": true marks a build from a checkout with uncommitted changes. It
does not ask a running podsup: "podsup status" does (the API's /v1/version).
--short prints the version alone (v0.3.0, or dev), for scripts.`,
		Example: `  podsup version
  podsup version --short
  podsup version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := f.json()
			if err != nil {
				return err
			}
			b := readBuildInfo()
			if short {
				if asJSON {
					return printJSON(cmd.OutOrStdout(), map[string]string{"version": b.Version})
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), b.Version)
				return err
			}
			return printVersion(cmd.OutOrStdout(), b, asJSON)
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print only the version (v0.3.0, or dev)")
	return cmd
}

func printVersion(w io.Writer, b buildInfo, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(b)
	}
	_, err := fmt.Fprintln(w, b.String())
	return err
}
