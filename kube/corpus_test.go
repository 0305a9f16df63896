package kube

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/podsup/podsup/config"
)

var update = flag.Bool("update", false, "rewrite testdata/k8s-website/examples/expected.txt from what Convert gives")

const corpusDir = "testdata/k8s-website/examples"

// TestKubernetesWebsiteCorpus converts kubernetes/website's example
// manifests (testdata/k8s-website/examples, README.md there) and holds
// each result to expected.txt: converted, with every finding, or refused,
// with every reason, each of which names the flag that would help. A change in what any of them gives fails here; -update
// writes the new results for review.
//
// Every one that converts must also give HCL that podsup's loader takes,
// and export to YAML that decodes strictly with k8s.io/api and has what
// the API server requires of a Pod (a name; each container a name and an
// image); export → convert → export must give the same bytes.
func TestKubernetesWebsiteCorpus(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 40 {
		t.Fatalf("the corpus: %d files, %v", len(files), err)
	}
	slices.Sort(files)
	var got bytes.Buffer
	converted := 0
	for _, f := range files {
		name, _ := filepath.Rel(corpusDir, f)
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&got, "== %s\n", filepath.ToSlash(name))
		res, err := Convert(bytes.NewReader(src), Options{})
		var fe *FindingsError
		switch {
		case errors.As(err, &fe):
			got.WriteString("refused\n")
			for _, fd := range fe.Findings {
				fmt.Fprintf(&got, "  %s\n", fd)
				if fd.Error && !namesAFlag(fd.Msg) {
					t.Errorf("%s: a refusal that names no flag to help: %s", name, fd)
				}
			}
			continue
		case err != nil:
			fmt.Fprintf(&got, "refused\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
			continue
		}
		converted++
		fmt.Fprintf(&got, "converts: %d group(s)\n", len(res.Config.Groups))
		for _, fd := range res.Findings {
			fmt.Fprintf(&got, "  %s\n", fd)
		}
		t.Run(name, func(t *testing.T) { checkCorpusRoundTrip(t, res) })
	}
	want, err := os.ReadFile(filepath.Join(corpusDir, "expected.txt"))
	if *update {
		if err := os.WriteFile(filepath.Join(corpusDir, "expected.txt"), got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote expected.txt: %d of %d convert", converted, len(files))
		return
	}
	if err != nil {
		t.Fatalf("%v (go test ./kube -run TestKubernetesWebsiteCorpus -update writes it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("the corpus's results changed: go test ./kube -run TestKubernetesWebsiteCorpus -update rewrites expected.txt; review its git diff. The first difference:\n%s", firstDifference(string(want), got.String()))
	}
}

// namesAFlag says whether a refusal's message names one of podsup-kube's
// flags, the way past it when the manifest itself is right.
func namesAFlag(msg string) bool {
	for _, f := range []string{"--image ", "--entrypoint ", "--rootfs ", "--configmap ", "--secret ", "--pod-ip ", "--host-ip ", "--node-name "} {
		if strings.Contains(msg, f) {
			return true
		}
	}
	return false
}

// checkCorpusRoundTrip holds a converted manifest to what podsup and a
// real API server take, and to a stable export.
func checkCorpusRoundTrip(t *testing.T, res *Result) {
	var hcl bytes.Buffer
	if err := WriteHCL(&hcl, res, "corpus.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse(hcl.Bytes(), "converted.hcl"); err != nil {
		t.Fatalf("the HCL does not load: %v\n%s", err, hcl.String())
	}
	var first bytes.Buffer
	if _, err := Export(&first, res.Config, ExportOptions{}); err != nil {
		t.Fatalf("export: %v", err)
	}
	strictPods(t, first.Bytes())
	back, err := Convert(bytes.NewReader(first.Bytes()), Options{})
	if err != nil {
		t.Fatalf("convert of the export: %v\n%s", err, first.String())
	}
	var second bytes.Buffer
	if _, err := Export(&second, back.Config, ExportOptions{}); err != nil {
		t.Fatalf("second export: %v", err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Errorf("export → convert → export changed the YAML:\n%s\nthen\n%s", first.String(), second.String())
	}
}

// strictPods decodes every document of yml as a Pod, strictly, and checks
// the fields the API server requires.
func strictPods(t *testing.T, yml []byte) {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(yml)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		strict, err := kjson.UnmarshalStrict(js, &pod)
		if err != nil || len(strict) > 0 {
			t.Fatalf("the export does not decode strictly as a Pod: %v %v\n%s", err, strict, doc)
		}
		if pod.Name == "" || len(pod.Spec.Containers) == 0 {
			t.Errorf("a Pod without a name or containers:\n%s", doc)
		}
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			if c.Name == "" || c.Image == "" {
				t.Errorf("container %q has no name or no image:\n%s", c.Name, doc)
			}
		}
	}
}

// firstDifference is the first line where want and got differ, with
// the manifest it belongs to.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	manifest := ""
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if strings.HasPrefix(gl, "== ") {
			manifest = gl
		}
		if wl != gl {
			return fmt.Sprintf("%s\nline %d:\n- %s\n+ %s", manifest, i+1, wl, gl)
		}
	}
	return ""
}
