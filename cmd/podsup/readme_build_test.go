package main

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

// TestREADMEBuildCommandGivesAStaticBinary runs the build command of
// README's Build section as written (only its output put in a temporary
// directory) and checks the binary is what README and --help promise:
// static, with no ELF interpreter and no shared library. Without
// CGO_ENABLED=0 Go links podsup against the C library (os/user, net).
func TestREADMEBuildCommandGivesAStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds podsup: not with -short")
	}
	t.Parallel()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, build, ok := strings.Cut(string(readme), "\n## Build\n")
	build, _, _ = strings.Cut(build, "\n## ")
	_, block, ok2 := strings.Cut(build, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var line string
	for _, l := range strings.Split(block, "\n") {
		if strings.Contains(l, "go build") && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			line = strings.TrimSpace(l)
			break
		}
	}
	if !ok || !ok2 || line == "" || !strings.Contains(line, "-o podsup ") {
		t.Fatalf("README's Build section has no `go build -o podsup ...` line:\n%s", build)
	}
	for _, l := range strings.Split(block, "\n") {
		if strings.Contains(l, "go install") && !strings.Contains(l, "CGO_ENABLED=0") {
			t.Errorf("README's go install line builds a dynamically linked binary: %q", l)
		}
	}
	out := filepath.Join(t.TempDir(), "podsup")
	line = strings.Replace(line, "-o podsup ", "-o "+out+" ", 1)
	var env []string
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "CGO_ENABLED=") { // as a user's shell has it: unset
			env = append(env, kv)
		}
	}
	logf, err := os.CreateTemp(t.TempDir(), "build")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p, err := proc.Start(&proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", line}, RunAs: proc.RunAs{Env: env, Dir: repo}, Stdout: logf, Stderr: logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil { // still building after 10m: stop it
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
	}
	if err != nil || e.Code() != 0 {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("%s: %v %v\n%s", line, e, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s gives a dynamically linked binary (it has an ELF interpreter): README says one static binary", line)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s gives a binary that needs %v", line, libs)
	}
}
