package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podsup/podsup/internal/gotool"
)

// A manifest whose commands come from its image, end to end: a
// busybox-style root filesystem (one static binary, built here) and its
// image as an OCI layout, given with --rootfs and --image; podsup-kube
// play runs the init and the container in that root with the image's
// entrypoint, env, working directory and user, the manifest's $(VAR)
// expanded, a ConfigMap of the same file read by envFrom, the downward
// API's pod name and HOSTNAME set.
func TestPlayImageEntrypointEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds podsup, podsup-kube and a static tool, and runs a pod")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the pod runs in a sandbox that pivot_roots into the image's root filesystem; CI runs as root")
	}
	t.Parallel()
	podsup, kubeBin := playBinaries(t)

	rootfs := t.TempDir()
	for _, d := range []string{"bin", "work"} {
		if err := os.Mkdir(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// No cgo and no net or os/user: the go tool links it statically.
	gotool.Output(t, "build", "-o", filepath.Join(rootfs, "bin", "minibox"), "github.com/podsup/podsup/kube/cmd/podsup-kube/testdata/minibox")
	layout := t.TempDir()
	writeImageLayout(t, layout, ocispec.ImageConfig{
		Entrypoint: []string{"/bin/minibox"}, Cmd: []string{"report", "from-cmd"},
		Env: []string{"PATH=/bin", "FROM_IMAGE=yes", "GREETING=image's"}, WorkingDir: "/work", User: "65534:65534",
	})

	dir := t.TempDir()
	manifest := filepath.Join(dir, "box.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {GREETING: hello}
---
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: init
    image: minibox:1
    args: [echo, "init: $(GREETING) from $(POD), $$(GREETING) $(FROM_IMAGE)"]
    envFrom: [{configMapRef: {name: settings}}]
    env:
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
  containers:
  - name: main
    image: minibox:1
    envFrom: [{configMapRef: {name: settings}}]
    env:
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MSG, value: "$(GREETING), $(POD)"}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	socket := filepath.Join(dir, "podsup.sock")
	play, output, stopped := startPlay(t, podsup, kubeBin, []string{"podsup-kube", "play", "--socket", socket,
		"--image", "minibox:1=" + layout, "--rootfs", "minibox:1=" + rootfs, manifest})

	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(output(), "report done") {
		if time.Now().After(deadline) {
			t.Fatalf("main did not report within 2 minutes:\n%s", output())
		}
		select {
		case <-play.Done():
			t.Fatalf("podsup-kube play ended (%v) before main reported:\n%s", play.Exit(), output())
		case <-time.After(200 * time.Millisecond):
		}
	}
	out := output()
	for _, want := range []string{
		"init: hello from box, $(GREETING) $(FROM_IMAGE)", // the image's Env is not the manifest's to expand
		`args=["from-cmd"]`, // Entrypoint + Cmd
		"cwd=/work uid=65534 gid=65534",
		"env FROM_IMAGE=yes", "env GREETING=hello", "env HOSTNAME=box", "env MSG=hello, box", "env PATH=/bin", "env POD=box",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}

	stopPlay(t, play, output, stopped, 2*time.Minute)
	if l := logLine(t, output(), "process exited group=box process=main "); !strings.Contains(l, " exit_code=0") {
		t.Errorf("main did not exit 0 on SIGTERM: %s", l)
	}
	checkNoCgroupsLeft(t, socket)
}

// writeImageLayout writes an OCI image layout of one image, for this
// machine's platform, with configuration ic.
func writeImageLayout(t *testing.T, dir string, ic ocispec.ImageConfig) {
	t.Helper()
	blob := func(mediaType string, v any) ocispec.Descriptor {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		enc := hex.EncodeToString(sum[:])
		if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", enc), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigestFromEncoded(digest.SHA256, enc), Size: int64(len(b))}
	}
	platform := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	cfg := blob(ocispec.MediaTypeImageConfig, ocispec.Image{Platform: platform, Config: ic})
	m := blob(ocispec.MediaTypeImageManifest, ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg})
	m.Platform = &platform
	index := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{m}}
	index.SchemaVersion = 2
	b, _ := json.Marshal(index)
	if err := os.WriteFile(filepath.Join(dir, ocispec.ImageIndexFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ocispec.ImageLayoutFile), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}
