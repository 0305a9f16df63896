package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// writeBlob stores v in an OCI layout's blobs and returns its descriptor.
func writeBlob(t *testing.T, dir, mediaType string, v any) ocispec.Descriptor {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blobs, hex.EncodeToString(sum[:])), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(sum[:])), Size: int64(len(b))}
}

// writeLayout writes an OCI image layout of one image per config, for
// this machine's platform (and a decoy for another), named by ref.name
// when there are several; nested puts them behind an image index.
func writeLayout(t *testing.T, dir string, nested bool, configs map[string]ocispec.ImageConfig) {
	t.Helper()
	var descs []ocispec.Descriptor
	for name, ic := range configs {
		cfg := writeBlob(t, dir, ocispec.MediaTypeImageConfig, ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}, Config: ic})
		m := writeBlob(t, dir, ocispec.MediaTypeImageManifest, ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg})
		m.Platform = &ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
		other := writeBlob(t, dir, ocispec.MediaTypeImageManifest, ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: writeBlob(t, dir, ocispec.MediaTypeImageConfig, ocispec.Image{})})
		other.Platform = &ocispec.Platform{OS: "linux", Architecture: "s390x-not-this"}
		pair := []ocispec.Descriptor{m, other}
		if nested {
			idx := writeBlob(t, dir, ocispec.MediaTypeImageIndex, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: pair})
			pair = []ocispec.Descriptor{idx}
		}
		if len(configs) > 1 {
			pair[0].Annotations = map[string]string{ocispec.AnnotationRefName: name}
		}
		descs = append(descs, pair...)
	}
	index := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: descs}
	index.SchemaVersion = 2
	b, _ := json.Marshal(index)
	if err := os.WriteFile(filepath.Join(dir, ocispec.ImageIndexFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ocispec.ImageLayoutFile), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

var nginxConfig = ocispec.ImageConfig{
	Entrypoint: []string{"/docker-entrypoint.sh"}, Cmd: []string{"nginx", "-g", "daemon off;"},
	Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NGINX_VERSION=1.27.0", "MODE=image"}, WorkingDir: "/srv", User: "101:102",
}

// kubelet's rules for command and args against the image's Entrypoint
// and Cmd, with the image read from an OCI layout; the image's Env is
// under the container's (and not seen by $(VAR)), its WorkingDir and
// User apply where the container sets none.
func TestConvertTakesEntrypointAndCmdFromAnImage(t *testing.T) {
	t.Parallel()
	for _, nested := range []bool{false, true} {
		dir := t.TempDir()
		writeLayout(t, dir, nested, map[string]ocispec.ImageConfig{"1.27": nginxConfig, "other": {Cmd: []string{"other"}}})
		img, err := ReadImage(dir, "docker.io/library/nginx:1.27")
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: both, image: "nginx:1.27", command: [nginx], args: [-t]}
  - {name: command, image: "nginx:1.27", command: [nginx]}
  - name: args
    image: "nginx:1.27"
    args: ["$(MODE)", "$(NGINX_VERSION)"]
    env: [{name: MODE, value: mine}]
    workingDir: /mine
    securityContext: {runAsUser: 1000}
  - {name: neither, image: "nginx:1.27"}
`, Options{Images: map[string]*Image{"nginx:1.27": img}})
		ps := cfg.Groups[0].Processes
		for i, want := range [][]string{
			{"nginx", "-t"},
			{"nginx"},
			{"/docker-entrypoint.sh", "mine", "$(NGINX_VERSION)"},
			{"/docker-entrypoint.sh", "nginx", "-g", "daemon off;"},
		} {
			if !equal(ps[i].Command, want) {
				t.Errorf("nested=%v %s: command = %q, want %q", nested, ps[i].Name, ps[i].Command, want)
			}
		}
		if a, n := ps[2], ps[3]; a.Env["MODE"] != "mine" || a.Env["NGINX_VERSION"] != "1.27.0" || !strings.HasPrefix(a.Env["PATH"], "/usr/local/sbin") ||
			a.WorkingDir != "/mine" || a.User != "1000" || a.Group != "" ||
			n.WorkingDir != "/srv" || n.User != "101" || n.Group != "102" || n.Env["MODE"] != "image" {
			t.Errorf("nested=%v: the image's defaults: %s", nested, show(ps[2:]))
		}
	}
}

// An unpacked bundle's config.json gives the same (a runtime
// configuration's process, or an image configuration); --entrypoint
// stands in for a missing directory; what is missing is refused with both
// flags named.
func TestConvertImageFromBundleAndEntrypoint(t *testing.T) {
	t.Parallel()
	bundle, imgcfg := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"ociVersion":"1.0.2","process":{"args":["/bin/sh","-c","echo hi"],"env":["PATH=/bin"],"cwd":"/work","user":{"uid":7,"gid":8}},"root":{"path":"rootfs"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ocispec.Image{Config: nginxConfig})
	if err := os.WriteFile(filepath.Join(imgcfg, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	bi, err := ReadImage(bundle, "sh")
	if err != nil {
		t.Fatal(err)
	}
	ii, err := ReadImage(imgcfg, "nginx")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadImage(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "neither an OCI image layout") {
		t.Errorf("an empty directory: err = %v", err)
	}
	cfg, res := convertAndParse(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: bundle, image: sh}
  - {name: bundleargs, image: sh, args: [ls]}
  - {name: config, image: nginx}
  - {name: entry, image: "busybox:1.36", args: ["-c", "sleep 1"]}
  - {name: override, image: nginx, args: [x]}
`, Options{Images: map[string]*Image{"sh": bi, "nginx": ii}, Entrypoints: map[string][]string{"busybox:1.36": {"/bin/sh"}}})
	ps := cfg.Groups[0].Processes
	if p := ps[0]; !equal(p.Command, []string{"/bin/sh", "-c", "echo hi"}) || p.WorkingDir != "/work" || p.User != "7" || p.Group != "8" || p.Env["PATH"] != "/bin" {
		t.Errorf("bundle: %s", show(p))
	}
	if !equal(ps[1].Command, []string{"ls"}) || !strings.Contains(findingsText(res.Findings), "spec.containers[1].args: "+filepath.Join(bundle, "config.json")+" gives the image's entrypoint and Cmd as one command line") {
		t.Errorf("bundle with args: %q\n%s", ps[1].Command, findingsText(res.Findings))
	}
	if !equal(ps[2].Command, []string{"/docker-entrypoint.sh", "nginx", "-g", "daemon off;"}) || ps[2].User != "101" {
		t.Errorf("image config: %s", show(ps[2]))
	}
	if !equal(ps[3].Command, []string{"/bin/sh", "-c", "sleep 1"}) {
		t.Errorf("--entrypoint: %q", ps[3].Command)
	}
	if !equal(ps[4].Command, []string{"/docker-entrypoint.sh", "x"}) {
		t.Errorf("image with args: %q", ps[4].Command)
	}
	_, err = Convert(strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: web, image: "nginx:1.27", args: [x]}
  - {name: empty, image: blank}
`), Options{Images: map[string]*Image{"blank": {From: "blank/config.json"}, "unused": {}}})
	for _, want := range []string{
		`spec.containers[0].command: container "web" has no command: podsup runs no image, so it knows no entrypoint for "nginx:1.27": give the image's directory with --image nginx:1.27=DIR (an OCI image layout or an unpacked bundle), or its entrypoint with --entrypoint nginx:1.27=CMD`,
		`spec.containers[1].command: container "empty" has no command, and image "blank" (blank/config.json) has neither Entrypoint nor Cmd`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestConvertWarnsAboutUnusedImages(t *testing.T) {
	t.Parallel()
	res, err := Convert(strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, command: [c]}]\n"),
		Options{Images: map[string]*Image{"unused": {}}, Entrypoints: map[string][]string{"gone": {"x"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := findingsText(res.Findings)
	for _, want := range []string{`warning: --image: no container runs image "unused"`, `warning: --entrypoint: no container runs image "gone"`} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
}

// A layout is content-addressed: a blob that does not match its digest,
// or a layout with several images and none of the name, is refused.
func TestReadImageRefusesWhatIsNotTheImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeLayout(t, dir, false, map[string]ocispec.ImageConfig{"a": {Cmd: []string{"a"}}, "b": {Cmd: []string{"b"}}})
	if _, err := ReadImage(dir, "img:c"); err == nil || !strings.Contains(err.Error(), `2 image manifests for linux/`+runtime.GOARCH+` and none named "img:c"`) {
		t.Errorf("err = %v", err)
	}
	if img, err := ReadImage(dir, "registry.example/img:b"); err != nil || !equal(img.Config.Cmd, []string{"b"}) {
		t.Errorf("by tag: %+v %v", img, err)
	}
	one := t.TempDir()
	writeLayout(t, one, false, map[string]ocispec.ImageConfig{"a": {Cmd: []string{"a"}}})
	blobs, _ := filepath.Glob(filepath.Join(one, "blobs", "sha256", "*"))
	for _, b := range blobs {
		if err := os.WriteFile(b, []byte(`{"config":{"Cmd":["evil"]}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadImage(one, "a"); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("tampered blob: err = %v", err)
	}
}
