package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/rttest/cnileft"
	"github.com/podsup/podsup/internal/testusers"
	"github.com/podsup/podsup/sandbox/proc"
)

// TestExamplesRun runs every examples/*.hcl briefly with podsup up: each
// process must come up running (or, a one-shot, complete), then SIGTERM
// must stop everything and podsup must exit 0 (X9).
func TestExamplesRun(t *testing.T) {
	testusers.RequireRoot(t) // edge.hcl's sandboxes, systemd.hcl's user nobody
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.hcl"))
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4", len(files))
	}
	// The conf.d example is a directory, run with a variable set.
	files = append(files, filepath.Join("..", "..", "examples", "conf.d"))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if filepath.Base(file) == "cni.hcl" {
				t.Skip("cni.hcl needs a CNI network of the host's own (a LAN port, a DHCP server): its header says how")
			}
			t.Parallel()                          // each has its own socket, so its own instance and cgroups
			var attached []api.NetworkDescription // network.hcl's sandboxes
			socket := filepath.Join(t.TempDir(), "podsup.sock")
			args := []string{"up", "-f", file, "--socket", socket}
			if filepath.Base(file) == "conf.d" {
				args = append(args, "--var", "http_port=8091")
			}
			pc := podsupCmd(t, args...)
			if filepath.Base(file) == "userns.hcl" {
				// The range its header tells the reader to add, and a
				// binary the sandbox's root (not the host's) may run as
				// its holder.
				testusers.AddSubIDs(t, "podsup-example", 2000000000, 655360)
				pc.Path = testusers.SharedExecutable(t)
			}
			// Where an example writes (log_dir) and listens (metrics_listen)
			// on a host, the test takes a place of its own.
			pc.Env = append(pc.Env, "PODSUP_LOG_DIR="+filepath.Join(t.TempDir(), "log"), "PODSUP_METRICS_LISTEN=127.0.0.1:0")
			if src, _ := os.ReadFile(file); strings.Contains(string(src), "sockets = [\"web\"]") {
				socketActivated(t, pc)
			}
			up := start(t, pc)
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
			if filepath.Base(file) == "network.hcl" {
				// The published port answers from the host.
				var body string
				if !eventually(func() bool {
					resp, err := http.Get("http://127.0.0.1:18080/")
					if err != nil {
						return false
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
					return resp.StatusCode == 200
				}) {
					t.Errorf("network.hcl's published port 18080 did not answer: %q\n%s", body, up.sofar(t))
				}
				// Its readiness probe reaches the sandbox's address.
				if !eventually(func() bool {
					st, err := c.Status(context.Background(), "web", "")
					return err == nil && len(st.Groups) == 1 && st.Groups[0].Ready
				}) {
					t.Errorf("network.hcl's web group never became ready\n%s", up.sofar(t))
				}
				// What its attachments are: checked for after shutdown.
				for _, g := range []string{"web", "db"} {
					d, err := c.Describe(context.Background(), g, "")
					if err != nil || d.Group.Sandbox == nil || d.Group.Sandbox.Network == nil || len(d.Group.Sandbox.Network.IPs) == 0 {
						t.Errorf("describe %s: no network attachment (%v)", g, err)
						continue
					}
					attached = append(attached, *d.Group.Sandbox.Network)
				}
			}
			_ = up.p.Signal(syscall.SIGTERM)
			if e := up.wait(t); e.Code() != 0 {
				t.Fatalf("podsup up -f %s after SIGTERM: %s\n%s", file, e, up.rest(t))
			}
			for _, n := range attached {
				cnileft.Check(t, n.Network, n.ContainerID, n.IPs)
			}
		})
	}
}

// socketActivated makes c a socket-activated podsup, as systemd (or
// systemd-socket-activate -l 127.0.0.1:8095 --fdname=web) starts the
// example: a listener on 127.0.0.1:8095, the port its probe and hook
// name, handed over as fd 3 named "web", with LISTEN_PID set to the pid
// podsup runs as (the __listenpid shim).
func socketActivated(t *testing.T, c *proc.Cmd) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:8095")
	if err != nil {
		t.Fatalf("systemd.hcl's socket 127.0.0.1:8095: %v (is another program on the port?)", err)
	}
	t.Cleanup(func() { l.Close() })
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close() })
	c.Args = append([]string{c.Args[0], "__listenpid", testExe(t)}, c.Args[1:]...)
	c.Env = append(c.Env, "LISTEN_FDS=1", "LISTEN_FDNAMES=web")
	c.ExtraFiles = []*os.File{lf}
}
