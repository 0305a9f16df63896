package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/kube"
)

var updatePlay = flag.Bool("update-play", false, "rewrite testdata/corpus-play.txt from what TestPlayCorpusEndToEnd gives")

const (
	corpusDir      = "../../testdata/k8s-website/examples"
	corpusPlayFile = "testdata/corpus-play.txt"
)

// A corpus manifest's play: how it runs here, or why it cannot.
type corpusPlay struct {
	// flags are podsup-kube's, beyond --socket (and --rootfs, below).
	flags []string
	// toolbox runs every container in a root filesystem of this machine's
	// sh and the tools the manifest calls (toolboxTools), in the manner of
	// the busybox or alpine image it names: for the manifests that write
	// into their volumes' mount points (/opt, /config, ...), which on the
	// host would be the machine's own directories.
	toolbox bool
	// until is what says it plays: "running" (every process and sidecar
	// has a pid), "completed" (every process exited 0, a Job's or a
	// CronJob's run) or "output:TEXT" (a line of the pod's output).
	until string
	// cannot is why it cannot play here; the rest is then unused.
	cannot string
}

// corpusPlays has a plan for every corpus manifest that converts (the
// test fails on one it lacks): kubernetes/website's examples that have a
// container command play, on the host where their commands only read and
// print, in a toolbox root filesystem where they write files; those
// whose program is the image's own are refused for no command (the
// corpus test's expected.txt) or cannot play without that image.
var corpusPlays = map[string]corpusPlay{
	"application/deployment-sidecar.yaml":             {toolbox: true, until: "output:| logging"}, // the sidecar's tail of the app's file
	"application/job/cronjob.yaml":                    {until: "completed"},
	"application/job/indexed-job.yaml":                {toolbox: true, until: "completed"},
	"application/job/job-sidecar.yaml":                {toolbox: true, until: "completed"},
	"application/zookeeper/zookeeper.yaml":            {cannot: "its command runs start-zookeeper, the image's program, which no local directory here provides"},
	"controllers/job-pod-failure-policy-example.yaml": {until: "running"}, // it exits 42 on purpose, after 5 s
	"controllers/job.yaml":                            {until: "completed"},
	// printenv exits 1 after printing: KUBERNETES_PORT is not set (there
	// is no API server), and OnFailure starts it again.
	"pods/commands.yaml":                             {until: "output:command-demo"},
	"pods/inject/dapi-envars-pod.yaml":               {flags: []string{"--pod-ip", "127.0.0.1"}, until: "running"},
	"pods/inject/dependent-envars.yaml":              {until: "running"},
	"pods/multi-container/adapter.yaml":              {toolbox: true, until: "output:adapted: "},
	"pods/multi-container/startup-coordination.yaml": {toolbox: true, until: "output:greeting=hello"},
	"pods/probe/grpc-liveness.yaml":                  {cannot: "its command is /usr/local/bin/etcd, the image's program, which no local directory here provides"},
	"pods/resource/memory-request-limit.yaml":        {cannot: "its command is stress, the image's program, which no local directory here provides"},
}

// toolboxTools are the programs the toolbox manifests call besides the
// shell's builtins.
var toolboxTools = []string{"sh", "bash", "sleep", "tail", "cat", "date", "test", "touch", "echo", "rev"}

// toolboxDirs are the toolbox manifests' volume mount points: emptyDirs
// in a cluster, directories of the root filesystem here.
var toolboxDirs = []string{"opt", "config", "input", "var/log/app", "tmp", "proc", "dev"}

// Every manifest of kubernetes/website's examples that converts plays,
// one after another, with the real binaries: podsup-kube play starts it,
// its processes run (a Job's complete), and SIGTERM stops it: exit 0, no
// process and no cgroup left. testdata/corpus-play.txt holds the outcome
// of each, and why the ones that cannot play cannot; a change fails.
func TestPlayCorpusEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds podsup and podsup-kube and plays a dozen manifests")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: pods with limits or a root filesystem run in sandboxes; CI runs as root")
	}
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

	podsup, kubeBin := playBinaries(t)
	toolbox := buildToolbox(t)

	var got bytes.Buffer
	seen := map[string]bool{}
	for _, f := range files {
		name, _ := filepath.Rel(corpusDir, f)
		name = filepath.ToSlash(name)
		plan, planned := corpusPlays[name]
		seen[name] = planned
		var cf convertFlags
		cmd := &cobra.Command{}
		cf.register(cmd)
		if err := cmd.Flags().Parse(plan.flags); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, err := cf.options()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := kube.Convert(bytes.NewReader(src), o)
		switch {
		case err != nil && planned:
			t.Errorf("%s: no longer converts, yet corpusPlays has a plan for it: %v", name, err)
			continue
		case err != nil:
			continue
		case !planned:
			t.Errorf("%s converts: give it a plan in corpusPlays (how it plays, or why it cannot)", name)
			continue
		}
		fmt.Fprintf(&got, "== %s\n", name)
		if plan.cannot != "" {
			fmt.Fprintf(&got, "cannot play: %s\n", plan.cannot)
			continue
		}
		if len(res.Config.Groups) != 1 {
			t.Fatalf("%s: %d groups, want 1", name, len(res.Config.Groups))
		}
		where := "on the host"
		args := []string{"podsup-kube", "play", "--socket", ""}
		args = append(args, plan.flags...)
		if plan.toolbox {
			where = "in a root filesystem of this machine's sh and tools"
			for _, img := range images(res) {
				args = append(args, "--rootfs", img+"="+toolbox)
			}
		}
		args = append(args, f)
		if ok := t.Run(name, func(t *testing.T) { playOne(t, podsup, kubeBin, args, res, plan.until) }); ok {
			fmt.Fprintf(&got, "plays: %s, until %s\n", where, untilText(plan.until))
		} else {
			fmt.Fprintf(&got, "failed to play: %s\n", where)
		}
	}
	for name := range corpusPlays {
		if _, ok := seen[name]; !ok {
			t.Errorf("corpusPlays names %s, which is not in the corpus", name)
		}
	}
	if *updatePlay {
		if err := os.WriteFile(corpusPlayFile, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(corpusPlayFile)
	if err != nil {
		t.Fatalf("%v (go test ./kube/cmd/podsup-kube -run TestPlayCorpusEndToEnd -update-play writes it)", err)
	}
	if !bytes.Equal(want, got.Bytes()) {
		t.Errorf("the corpus's plays changed (-update-play rewrites %s; review its diff):\n%s", corpusPlayFile, got.String())
	}
}

func untilText(until string) string {
	switch until {
	case "running":
		return "every process runs"
	case "completed":
		return "every process has exited 0"
	}
	return fmt.Sprintf("it prints %q", strings.TrimPrefix(until, "output:"))
}

// images are the containers' images of res's one group.
func images(res *kube.Result) []string {
	var out []string
	g := &res.Config.Groups[0]
	for _, p := range append(slices.Clone(g.Init), g.Processes...) {
		if p.Image != "" && !slices.Contains(out, p.Image) {
			out = append(out, p.Image)
		}
	}
	return out
}

// playOne runs podsup-kube play with args (its socket filled in) until
// the pod of res shows until, then stops it with SIGTERM and checks that
// nothing is left.
func playOne(t *testing.T, podsup, kubeBin string, args []string, res *kube.Result, until string) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "podsup.sock")
	args = slices.Clone(args)
	args[3] = socket
	play, output, stopped := startPlay(t, podsup, kubeBin, args)
	g := &res.Config.Groups[0]
	client := api.NewClient(socket)
	var pids []int
	done := func() bool {
		out := output()
		switch {
		case until == "running":
			st, err := client.Status(context.Background(), g.Name, "")
			if err != nil {
				return false
			}
			pids = pids[:0]
			for _, sg := range st.Groups {
				for _, p := range sg.Processes {
					if p.Pid <= 0 {
						return false
					}
					pids = append(pids, p.Pid)
				}
			}
			return len(pids) > 0
		case until == "completed":
			for _, p := range g.Processes {
				if !exitedZero(out, g.Name, p.Name) {
					return false
				}
			}
			return true
		default:
			return strings.Contains(out, strings.TrimPrefix(until, "output:"))
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within a minute:\n%s", until, output())
		}
		select {
		case <-play.Done():
			t.Fatalf("podsup-kube play ended (%v) before it was %s:\n%s", play.Exit(), until, output())
		case <-time.After(200 * time.Millisecond):
		}
	}
	tree := descendants(play.Pid())

	stopPlay(t, play, output, stopped, time.Minute)
	for _, pid := range tree {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("process %d is still there", pid)
		}
	}
	checkNoCgroupsLeft(t, socket)
	if t.Failed() || testing.Verbose() {
		t.Logf("podsup-kube play's output:\n%s", output())
	}
}

// exitedZero says whether out logs process p of group g exiting 0.
func exitedZero(out, g, p string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "process exited group="+g+" process="+p+" ") && (strings.Contains(l, " exit_code=0 ") || strings.HasSuffix(strings.TrimSpace(l), " exit_code=0")) {
			return true
		}
	}
	return false
}

// descendants are the pids below pid, from /proc's parent links.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// buildToolbox makes a root filesystem of this machine's toolboxTools,
// each with the shared libraries it loads (from its ELF dynamic section),
// at the paths the host has them, and the toolbox manifests' mount
// points: the stand-in for their busybox and alpine images.
func buildToolbox(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range append([]string{"usr/bin"}, toolboxDirs...) {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	copied := map[string]bool{}
	var copyELF func(src, dst string)
	copyELF = func(src, dst string) {
		if copied[dst] {
			return
		}
		copied[dst] = true
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, dst)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dst), b, 0o755); err != nil {
			t.Fatal(err)
		}
		ef, err := elf.Open(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		defer ef.Close()
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				if _, err := p.ReadAt(b, 0); err != nil {
					t.Fatal(err)
				}
				interp := string(bytes.TrimRight(b, "\x00"))
				copyELF(interp, interp)
			}
		}
		libs, err := ef.ImportedLibraries()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			t.Fatalf("%s: %v", src, err)
		}
		for _, lib := range libs {
			path := findLibrary(lib)
			if path == "" {
				t.Fatalf("%s needs %s, which is in none of the library directories", src, lib)
			}
			copyELF(path, path)
		}
	}
	for _, tool := range toolboxTools {
		path, err := lookPath(tool)
		if err != nil {
			t.Fatalf("the toolbox needs this machine's %s: %v", tool, err)
		}
		copyELF(path, "/usr/bin/"+tool)
	}
	return root
}

// lookPath is tool's path on PATH, without os/exec (whose Cmd this
// module does not use).
func lookPath(tool string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH") + ":/usr/bin:/bin") {
		p := filepath.Join(d, tool)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH", tool)
}

// findLibrary is where the dynamic linker would find soname.
func findLibrary(soname string) string {
	for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		p := filepath.Join(d, soname)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
