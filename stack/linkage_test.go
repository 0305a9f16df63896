package stack_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/gotool"
)

// notLinked are the modules a program that embeds podsup must not carry:
// Kubernetes' types are podsup-kube's (module github.com/podsup/podsup/kube),
// golang.org/x/tools the lint's (internal/lint), and Prometheus' libraries
// the control socket's metrics (api/apiserver), which stack does not serve.
var notLinked = []string{"k8s.io/", "sigs.k8s.io/", "golang.org/x/tools", "github.com/prometheus/"}

// TestEmbedderLinksNoKubernetes lists, with `go list -deps`, the modules
// of package stack, all that a program embedding podsup's runtime imports,
// and fails naming any of notLinked.
func TestEmbedderLinksNoKubernetes(t *testing.T) {
	out := gotool.Output(t, "list", "-deps", "-f", `{{with .Module}}{{.Path}}{{end}}`, ".")
	mods := strings.Fields(out)
	if !slices.Contains(mods, "github.com/podsup/podsup") || !slices.Contains(mods, "golang.org/x/sys") {
		t.Fatalf("go list does not show podsup and golang.org/x/sys among stack's modules, so this test checks nothing:\n%s", out)
	}
	slices.Sort(mods)
	for _, m := range slices.Compact(mods) {
		for _, bad := range notLinked {
			if strings.HasPrefix(m, bad) {
				t.Errorf("package stack links %s", m)
			}
		}
	}
}

// TestModuleRequiresNoKubernetes: podsup's go.mod, which every embedder's
// build reads, names no Kubernetes module: they are the kube module's
// (kube/go.mod). golang.org/x/tools may stay there as an indirect
// requirement (hcl's tests need it) without being linked or compiled.
func TestModuleRequiresNoKubernetes(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module github.com/podsup/podsup\n") {
		t.Fatalf("../go.mod is not podsup's")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (strings.HasPrefix(f[0], "k8s.io/") || strings.HasPrefix(f[0], "sigs.k8s.io/")) {
			t.Errorf("podsup's go.mod requires %s: it belongs in kube/go.mod", f[0])
		}
	}
}
