package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/api"
)

// TestExamplesRun runs every examples/*.hcl briefly with podsup up: each
// process must come up running, then SIGTERM must stop everything and
// podsup must exit 0 (X9).
func TestExamplesRun(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.hcl"))
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel() // each has its own socket, so its own instance and cgroups
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "sandbox {") && os.Geteuid() != 0 {
				t.Skip("needs root: the example has sandboxes (CI runs as root)")
			}
			socket := filepath.Join(t.TempDir(), "podsup.sock")
			up := start(t, podsupCmd(t, "up", "-f", file, "--socket", socket))
			c := api.NewClient(socket)
			var last api.StatusResponse
			if !eventually(func() bool {
				st, err := c.Status(context.Background(), "", "")
				if err != nil || len(st.Groups) == 0 {
					return false
				}
				last = st
				for _, g := range st.Groups {
					for _, p := range g.Processes {
						if p.State != "running" {
							return false
						}
					}
				}
				return true
			}) {
				t.Fatalf("not every process of %s came up: %+v\n%s", file, last, up.sofar(t))
			}
			_ = up.p.Signal(syscall.SIGTERM)
			if e := up.wait(t); e.Code() != 0 {
				t.Fatalf("podsup up -f %s after SIGTERM: %s\n%s", file, e, up.rest(t))
			}
		})
	}
}
