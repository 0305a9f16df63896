package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/podsup/podsup/config"
	"github.com/podsup/podsup/internal/selftest"
	"github.com/podsup/podsup/sandbox/proc"
)

// With asMainEnv set the test binary is podsup-kube (it runs main), so
// play's exec can be tested without building the command.
const asMainEnv = "PODSUP_KUBE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cli runs podsup-kube in this process.
func cli(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func TestConvertCommandWritesHCLThatValidates(t *testing.T) {
	out, stderr, err := cli(t, "", "convert", "../../../examples/kube/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse([]byte(out), "out.hcl"); err != nil {
		t.Fatalf("convert's output does not validate: %v\n%s", err, out)
	}
	if !strings.Contains(stderr, `note: Pod/web: spec.containers[0].image: podsup runs no images`) {
		t.Errorf("stderr lacks the image note:\n%s", stderr)
	}
	if !strings.Contains(out, "# image: python:3.12-slim") || !strings.Contains(out, `image   = "python:3.12-slim"`) {
		t.Errorf("the image is not kept, as data and a comment:\n%s", out)
	}
	outFile := filepath.Join(t.TempDir(), "web.hcl")
	if _, _, err := cli(t, "", "convert", "-o", outFile, "../../../examples/kube/web.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(outFile); err != nil {
		t.Errorf("-o wrote a file that does not load: %v", err)
	}
}

// --strict fails on behaviour podsup cannot give, not on the images it
// was not asked to use (issue 31, item 9).
func TestConvertCommandStrictFails(t *testing.T) {
	if _, stderr, err := cli(t, "", "convert", "--strict", "../../../examples/kube/web.yaml"); err != nil || !strings.Contains(stderr, "note: Pod/web: spec.containers[0].image") {
		t.Errorf("err = %v, stderr:\n%s\nwant images to be notes under --strict", err, stderr)
	}
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: nginx, command: [x], volumeMounts: [{name: d, mountPath: /d}]}\n  volumes:\n  - {name: d, persistentVolumeClaim: {claimName: c}}\n"
	_, _, err := cli(t, pod, "convert", "--strict", "-")
	if err == nil || !strings.Contains(err.Error(), "error: Pod/p: spec.volumes[0].persistentVolumeClaim: podsup has no PersistentVolumeClaims") || !strings.Contains(err.Error(), "note: Pod/p: spec.containers[0].image") {
		t.Errorf("err = %v, want the claim's warning as an error, beside the image's note", err)
	}
}

func TestConvertCommandRootfs(t *testing.T) {
	dir := t.TempDir()
	out, _, err := cli(t, "", "convert", "--rootfs", "busybox:1.36="+dir, "--rootfs", "python:3.12-slim="+dir, "../../../examples/kube/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `rootfs     = "`+dir+`"`) || !strings.Contains(out, "# image: python:3.12-slim (run from its unpacked root filesystem "+dir+")") {
		t.Errorf("no rootfs in the sandbox:\n%s", out)
	}
	for _, bad := range []string{"nodir", "img=" + filepath.Join(dir, "missing")} {
		if _, _, err := cli(t, "", "convert", "--rootfs", bad, "../../../examples/kube/web.yaml"); err == nil || !strings.Contains(err.Error(), "--rootfs") {
			t.Errorf("--rootfs %s: err = %v", bad, err)
		}
	}
}

// --configmap and --secret give the ConfigMaps and Secrets that
// valueFrom and envFrom read.
func TestConvertCommandConfigMapAndSecretFiles(t *testing.T) {
	dir := t.TempDir()
	cm, sec := filepath.Join(dir, "cm.yaml"), filepath.Join(dir, "secret.yaml")
	if err := os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {LEVEL: debug}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sec, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {token: t0k}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: app
    command: [app]
    envFrom: [{configMapRef: {name: settings}}]
    env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: creds, key: token}}}]
`
	out, _, err := cli(t, pod, "convert", "--configmap", cm, "--secret", sec, "-")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`LEVEL += "debug"`).MatchString(out) || !regexp.MustCompile(`TOKEN += "t0k"`).MatchString(out) {
		t.Errorf("the variables are not resolved:\n%s", out)
	}
	if _, _, err := cli(t, pod, "convert", "--configmap", sec, "-"); err == nil || !strings.Contains(err.Error(), "--configmap "+sec+": document 1: a Secret, not a ConfigMap") {
		t.Errorf("a Secret given as --configmap: err = %v", err)
	}
	if _, _, err := cli(t, pod, "convert", "--configmap", cm, "-"); err == nil || !strings.Contains(err.Error(), "--secret FILE") {
		t.Errorf("no Secret: err = %v", err)
	}
}

// --image reads an image's configuration; --entrypoint stands in for it;
// without either, the refusal names both.
func TestConvertCommandImageAndEntrypoint(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"config":{"Entrypoint":["/bin/echo"],"Cmd":["from","image"],"WorkingDir":"/tmp"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: \"echo:1\"}\n  - {name: b, image: \"sh:1\", args: [-c, \"true\"]}\n"
	out, _, err := cli(t, pod, "convert", "--image", "echo:1="+dir, "--entrypoint", `sh:1=["/bin/sh"]`, "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `command = ["/bin/echo", "from", "image"]`) || !strings.Contains(out, `command = ["/bin/sh", "-c", "true"]`) {
		t.Errorf("the image's entrypoint is not used:\n%s", out)
	}
	_, _, err = cli(t, pod, "convert", "-")
	for _, want := range []string{"--image echo:1=DIR", "--entrypoint echo:1=CMD", "--image sh:1=DIR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q: %v", want, err)
		}
	}
	for _, bad := range [][]string{{"--image", "nodir"}, {"--image", "x=" + t.TempDir()}, {"--entrypoint", "x="}, {"--entrypoint", "x=[1]"}} {
		if _, _, err := cli(t, pod, append([]string{"convert"}, append(bad, "-")...)...); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: err = %v", bad, err)
		}
	}
}

// export | convert - gives back the file's groups.
func TestExportPipesIntoConvert(t *testing.T) {
	if _, _, err := cli(t, "", "export", "-f", "../../../examples/edge.hcl"); err == nil || !strings.Contains(err.Error(), `error: Pod/sensors: spec.containers[0].image: "collector" has none`) {
		t.Errorf("export of processes without an image: err = %v", err)
	}
	yml, stderr, err := cli(t, "", "export", "-f", "../../../examples/edge.hcl", "--kind", "deployment", "--default-image", "busybox:1.37")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "warning: supervisor: podsup's own settings have no place in a Pod") ||
		!strings.Contains(stderr, "podsup.dev/group") {
		t.Errorf("export's warnings:\n%s", stderr)
	}
	hcl, _, err := cli(t, yml, "convert", "--strict", "-")
	if err != nil {
		t.Fatalf("convert -: %v", err)
	}
	got, err := config.Parse([]byte(hcl), "back.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.Load("../../../examples/edge.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Groups {
		w, g := want.Groups[i], got.Groups[i]
		if w.Name != g.Name || w.EffectiveBackoff(want.Backoff) != g.EffectiveBackoff(got.Backoff) || len(w.Processes) != len(g.Processes) {
			t.Errorf("group %d: want %+v, got %+v", i, w, g)
		}
	}
	if _, _, err := cli(t, "", "export", "-f", "../../../examples/edge.hcl", "--kind", "service"); err == nil || !strings.Contains(err.Error(), `--kind "service": want pod or deployment`) {
		t.Errorf("--kind service: err = %v", err)
	}
}

// play hands the converted HCL to podsup up: the same process, argv
// "up -f FILE" and a FILE that holds what convert prints. A stand-in
// podsup prints its arguments and the file.
func TestPlayExecsPodsupUpOnTheConvertedHCL(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "podsup")
	script := "#!/bin/sh\necho \"argv: $*\"\necho \"pid: $$\"\nfor a; do last=$a; done\ncat \"$last\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	text, pid := selftest.Exec(t, proc.Cmd{
		Args:  []string{"podsup-kube", "play", "--socket", filepath.Join(dir, "s.sock"), "../../../examples/kube/web.yaml"},
		RunAs: proc.RunAs{Env: append(os.Environ(), asMainEnv+"=1", "PODSUP_BIN="+fake)},
	})
	if !strings.Contains(text, "argv: --socket "+filepath.Join(dir, "s.sock")+" up -f /proc/self/fd/") {
		t.Errorf("podsup was not run as podsup up -f FILE:\n%s", text)
	}
	if !strings.Contains(text, "pid: "+itoa(pid)) {
		t.Errorf("podsup up is not podsup-kube's own process (pid %d):\n%s", pid, text)
	}
	hcl := text[strings.Index(text, "# Converted from"):]
	if _, err := config.Parse([]byte(hcl), "played.hcl"); err != nil || !strings.Contains(hcl, `group "web"`) {
		t.Errorf("the file podsup up reads is not the converted configuration (%v):\n%s", err, hcl)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// --pod-ip, --host-ip and --node-name are the downward API's fields that
// podsup-kube cannot know for the machine that runs the pod.
func TestConvertDownwardAPIFlags(t *testing.T) {
	const manifest = "../../../kube/testdata/k8s-website/examples/pods/inject/dapi-envars-pod.yaml"
	if _, _, err := cli(t, "", "convert", manifest); err == nil || !strings.Contains(err.Error(), "--pod-ip ADDR") {
		t.Errorf("without --pod-ip: %v", err)
	}
	out, _, err := cli(t, "", "convert", "--pod-ip", "10.1.2.3", "--node-name", "node-a", manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`MY_POD_IP              = "10.1.2.3"`, `MY_NODE_NAME           = "node-a"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the HCL lacks %s:\n%s", want, out)
		}
	}
	for _, bad := range []string{"--pod-ip", "--host-ip"} {
		if _, _, err := cli(t, "", "convert", bad, "10.1.2", manifest); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s 10.1.2: %v", bad, err)
		}
	}
}
