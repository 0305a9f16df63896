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
// process must come up running (or, a one-shot, complete), then SIGTERM
// must stop everything and podsup must exit 0 (X9).
func TestExamplesRun(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.hcl"))
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4", len(files))
	}
	// The conf.d example is a directory, run with a variable set.
	files = append(files, filepath.Join("..", "..", "examples", "conf.d"))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel() // each has its own socket, so its own instance and cgroups
			socket := filepath.Join(t.TempDir(), "podsup.sock")
			args := []string{"up", "-f", file, "--socket", socket}
			if filepath.Base(file) == "conf.d" {
				args = append(args, "--var", "http_port=8091")
			} else {
				src, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(src), "sandbox {") && os.Geteuid() != 0 {
					t.Skip("needs root: the example has sandboxes (CI runs as root)")
				}
			}
			up := start(t, podsupCmd(t, args...))
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
						if p.State != "running" && (p.State != "terminated" || p.Reason != "Completed") {
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
