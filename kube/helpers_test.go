package kube

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"testing"
)

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func osDirFS(dir string) fs.FS { return os.DirFS(dir) }

func lookPath(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Errorf("%q is not on this machine: %v", name, err)
	}
}
