package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/rttest/cnileft"
)

// hostPortDeployment publishes its container's 8080 on the host's 18281
// and serves a file it wrote into an emptyDir.
const hostPortDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: cache}
spec:
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers:
      - name: web
        image: python:3.12-slim
        command: [sh, -c, 'echo from-the-empty-dir > /cache/index.html && exec python3 -m http.server --bind 0.0.0.0 --directory /cache 8080']
        ports:
        - {name: http, containerPort: 8080, hostPort: 18281}
        volumeMounts:
        - {name: cache, mountPath: /cache}
        readinessProbe:
          httpGet: {port: http, path: /}
          periodSeconds: 1
      volumes:
      - name: cache
        emptyDir: {}
`

// Issue #30's Done-when for the bridge: podsup-kube play of a Deployment
// with a hostPort and an emptyDir runs, its port answers from the host
// with what the container wrote into its emptyDir, and SIGTERM leaves no
// address, rule or published port behind.
func TestPlayHostPortAndEmptyDirEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds podsup and podsup-kube and runs a bridged pod")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: a bridge network and a sandbox; CI runs as root")
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		if _, err := os.Stat("/opt/cni/bin/bridge"); err != nil {
			t.Fatal("the CNI plugins are not installed (apt-get install containernetworking-plugins iptables; .ci/run installs them)")
		}
	}
	podsup, kubeBin := playBinaries(t)

	dir := t.TempDir()
	manifest := filepath.Join(dir, "cache.yaml")
	if err := os.WriteFile(manifest, []byte(hostPortDeployment), 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "podsup.sock")
	play, output, stopped := startPlay(t, podsup, kubeBin, []string{"podsup-kube", "play", "--socket", socket, manifest})

	var body string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := http.Get("http://127.0.0.1:18281/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if resp.StatusCode == 200 && strings.Contains(body, "from-the-empty-dir") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hostPort 18281 did not serve the emptyDir's file within 2 minutes (last body %q):\n%s", body, output())
		}
		select {
		case <-play.Done():
			t.Fatalf("podsup-kube play ended (%v) before the port answered:\n%s", play.Exit(), output())
		case <-time.After(200 * time.Millisecond):
		}
	}
	// Its readiness probe, an httpGet of a named port, reaches the
	// sandbox's address.
	for {
		code, out := runBinary(t, podsup, "--socket", socket, "health")
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("podsup health still says %d: %s\n%s", code, out, output())
		}
		time.Sleep(200 * time.Millisecond)
	}

	d, err := api.NewClient(socket).Describe(context.Background(), "cache", "")
	if err != nil || d.Group.Sandbox == nil || d.Group.Sandbox.Network == nil || len(d.Group.Sandbox.Network.IPs) == 0 {
		t.Fatalf("describe cache: no network attachment (%v)", err)
	}
	attached := *d.Group.Sandbox.Network

	stopPlay(t, play, output, stopped, 2*time.Minute)
	// Nothing of its attachment is left (other tests' sandboxes may share
	// the bridge meanwhile: only this one's traces count), and the port
	// goes with it.
	cnileft.Check(t, attached.Network, attached.ContainerID, attached.IPs)
	if resp, err := http.Get("http://127.0.0.1:18281/"); err == nil {
		resp.Body.Close()
		t.Errorf("port 18281 still answers after the pod stopped")
	}
}
