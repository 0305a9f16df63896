package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue #25 items 6, 7 and 12: what a configuration may cost, what
// validate refuses because it could never run, and files that block.

// paddedFile is a configuration file of exactly size bytes: a few real
// groups (named after prefix), then comment lines, which are within the
// per-file limits of every version (one token a line).
func paddedFile(t *testing.T, path, prefix string, size int) {
	t.Helper()
	var b bytes.Buffer
	for i := range 3 {
		fmt.Fprintf(&b, "group %q {\n  process \"p\" {\n    command = [\"sleep\", \"100\"]\n  }\n}\n", fmt.Sprintf("%s-%d", prefix, i))
	}
	line := "# " + strings.Repeat("x", 1020) + "\n"
	for b.Len()+len(line) <= size {
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat("#", size-b.Len()-1) + "\n")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesAnOversizedConfigurationFast: -f big.hcl -f conf.d with
// 80 MB in five files, each under the per-file limit, is refused from the
// files' sizes, before any is read: fast, and without the memory reading
// them would take. The error names the limit and the size. (46b0b05 read
// and parsed all 80 MB: 52 s and 2.9 GB for the files.)
//
// Not parallel: the heap figures are the process's.
func TestLoadRefusesAnOversizedConfigurationFast(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.hcl")
	confd := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confd, 0o755); err != nil {
		t.Fatal(err)
	}
	paddedFile(t, big, "big", 16<<20)
	for i := range 4 {
		paddedFile(t, filepath.Join(confd, fmt.Sprintf("%d.hcl", i)), fmt.Sprintf("d%d", i), 16<<20)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := Options{}.Load(big, confd)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("80 MB of configuration loaded")
	}
	for _, want := range []string{"Configuration too large", "5 files hold 80 MiB", "at most 16 MiB over all the files"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if took > 5*time.Second {
		t.Errorf("refusing 80 MB took %v", took)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("refusing 80 MB allocated %d MiB: the files were read", grew>>20)
	}
}

// TestReadConfigFileStopsAtTheBytesLeft: a file that grew after its size
// was checked is refused as it is read, at the bytes left of the
// configuration's limit.
func TestReadConfigFileStopsAtTheBytesLeft(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "grown.hcl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("#\n"), 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	_, limitErr, err := readConfigFile(path, 4096, 3)
	if err != nil || limitErr == nil || !strings.Contains(limitErr.Error(), path+":1:1: Configuration too large: The configuration's 3 files hold more than 16 MiB") {
		t.Fatalf("a file read past the bytes left: %v %v", limitErr, err)
	}
}

func TestLoadRefusesTooManyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "0000.hcl"), []byte("group \"g\" {\n  process \"p\" { command = [\"x\"] }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 1500 more: beyond MaxFiles+1 they are only counted.
	for i := 1; i <= MaxFiles+500; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d.hcl", i)), []byte("# nothing\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Options{}.Load(dir)
	if err == nil || !strings.Contains(err.Error(), "Too many configuration files: The configuration has 1501 files") || !strings.Contains(err.Error(), "at most 1000") {
		t.Fatalf("1501 files: %v", err)
	}
}

// tinyGroups is n groups of one process each, p processes in the last.
func tinyGroups(n, p int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "group \"g%d\" {\n", i)
		procs := 1
		if i == n-1 {
			procs = p
		}
		for j := range procs {
			fmt.Fprintf(&b, "  process \"p%d\" { command = [\"x\"] }\n", j)
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// TestTheGroupAndProcessLimits: 10,000 groups of a process each load (the
// project's 10,000-process goal); one group or one process more is
// refused at the block that crosses the limit.
func TestTheGroupAndProcessLimits(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(tinyGroups(MaxGroups, 1), "many.hcl")
	if err != nil {
		t.Fatalf("10,000 groups of one process: %v", err)
	}
	if len(cfg.Groups) != MaxGroups {
		t.Fatalf("loaded %d groups", len(cfg.Groups))
	}
	_, err = Parse(tinyGroups(MaxGroups+1, 1), "groups.hcl")
	if err == nil || !strings.Contains(err.Error(), "groups.hcl:30001:1: Too many groups: The configuration has 10001 groups, and this is group 10001; podsup runs at most 10000") {
		t.Fatalf("10,001 groups: %v", err)
	}
	_, err = Parse(tinyGroups(2, MaxProcesses), "procs.hcl")
	if err == nil || !strings.Contains(err.Error(), "procs.hcl:10004:3: Too many processes: This process takes the configuration past 10000 processes") {
		t.Fatalf("10,001 processes: %v", err)
	}
}

// TestTheTokenLimitHoldsOverAllFiles: two files of 1.5 million tokens
// each are each within MaxTokens, and together over it.
func TestTheTokenLimitHoldsOverAllFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"a.hcl", "b.hcl"} {
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte("\n"), 1_500_000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Options{}.Load(dir)
	if err == nil || !strings.Contains(err.Error(), "b.hcl:500002:1: Configuration too long: The configuration's files have more than 2000000 tokens") || !strings.Contains(err.Error(), "1500000 of them in the files before this one") {
		t.Fatalf("3 million tokens in two files: %v", err)
	}
}

// TestLoadRefusesAFIFO: a FIFO among a conf.d's files is refused at once
// with what it is. 46b0b05 blocked in open(2) for ever (and a reload with
// it, and podsup's signal handling).
func TestLoadRefusesAFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.hcl"), []byte("group \"g\" {\n  process \"p\" { command = [\"x\"] }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "b.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Options{}.Load(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+":1:1: Configuration file is not a regular file: This is a named pipe (FIFO)") {
			t.Fatalf("a FIFO in conf.d: %v", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the open so the goroutine ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("loading a conf.d with a FIFO blocked for 10s")
	}
	// A symlink to a regular file is followed: package managers fill
	// conf.d with them.
	target := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(target, []byte("group \"h\" {\n  process \"p\" { command = [\"x\"] }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "c.hcl")); err != nil {
		t.Fatal(err)
	}
	if cfg, err := (Options{}).Load(dir); err != nil || len(cfg.Groups) != 2 {
		t.Fatalf("a conf.d with a symlink: %v", err)
	}
}

// TestValidateRefusesWhatCanNeverRun: each of these validated on 46b0b05
// and then failed at every start, or ran something else than written.
// Each is refused at its file:line:col.
func TestValidateRefusesWhatCanNeverRun(t *testing.T) {
	t.Parallel()
	regular := filepath.Join(t.TempDir(), "logs")
	if err := os.WriteFile(regular, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	process := func(body string) string {
		return "group \"g\" {\n  process \"p\" {\n" + body + "\n  }\n}\n"
	}
	resources := func(body string) string {
		return "group \"g\" {\n  sandbox {\n    resources {\n" + body + "\n    }\n  }\n  process \"p\" { command = [\"x\"] }\n}\n"
	}
	probe := func(body string) string {
		return process("    command = [\"x\"]\n    readiness_probe {\n" + body + "\n      exec { command = [\"true\"] }\n    }")
	}
	for name, c := range map[string]struct{ src, want string }{
		"env key with =":         {process(`    command = ["x"]` + "\n" + `    env = { "A=B" = "c" }`), `test.hcl:4:13: Invalid env: The variable name "A=B" contains "="`},
		"empty env key":          {process(`    command = ["x"]` + "\n" + `    env = { "" = "c" }`), `test.hcl:4:13: Invalid env: The variable name "" is empty`},
		"group env key with =":   {"group \"g\" {\n  env = { \"X=Y\" = \"1\" }\n  process \"p\" { command = [\"x\"] }\n}\n", `test.hcl:2:11: Invalid env: The variable name "X=Y" contains "="`},
		"NUL in an env value":    {process(`    command = ["x"]` + "\n" + `    env = { A = "b\u0000c" }`), `test.hcl:4:11: Invalid env: env["A"] contains a NUL byte`},
		"NUL in an env key":      {process(`    command = ["x"]` + "\n" + `    env = { "A\u0000" = "b" }`), `test.hcl:4:11: Invalid env: env["A\x00"] contains a NUL byte`},
		"NUL in the command":     {process(`    command = ["/bin/x\u0000y"]`), `test.hcl:3:15: Invalid command: command[0] contains a NUL byte`},
		"NUL in an argument":     {process(`    command = ["x", "a\u0000"]`), `test.hcl:3:15: Invalid command: command[1] contains a NUL byte`},
		"NUL in working_dir":     {process(`    command = ["x"]` + "\n" + `    working_dir = "/tmp\u0000"`), `test.hcl:4:19: Invalid working_dir: working_dir contains a NUL byte`},
		"NUL in a probe":         {process("    command = [\"x\"]\n    liveness_probe {\n      exec { command = [\"a\\u0000\"] }\n    }"), `test.hcl:5:24: Invalid command: command[0] contains a NUL byte`},
		"cpu 1e308":              {resources(`      cpu = 1e308`), "test.hcl:4:13: Invalid cpu: cpu must be a number of CPUs from 0 to 175921860"},
		"cpu beyond float64":     {resources(`      cpu = 1e400`), "test.hcl:4:13: Invalid cpu: cpu must be a number of CPUs from 0 to 175921860"},
		"cpu just over":          {resources(`      cpu = 175921861`), "Invalid cpu"},
		"pids 1e15":              {resources(`      pids = 1e15`), "test.hcl:4:14: Invalid pids: pids must be from 0 to 4194304"},
		"failure_threshold":      {probe(`      failure_threshold = 1e15`), "test.hcl:5:27: Invalid failure_threshold: failure_threshold must be between -2147483648 and 2147483647 (a 32-bit integer, as Kubernetes' fields are); got 1000000000000000."},
		"success_threshold":      {probe(`      success_threshold = 2147483648`), "test.hcl:5:27: Invalid success_threshold: success_threshold must be between -2147483648 and 2147483647"},
		"max_files":              {process("    command = [\"x\"]\n    log { max_files = -3000000000 }"), "test.hcl:4:23: Invalid max_files: max_files must be between -2147483648 and 2147483647"},
		"log_dir a regular file": {"supervisor { log_dir = \"" + regular + "\" }\n" + process(`    command = ["x"]`), `test.hcl:1:24: Invalid log_dir: log_dir "` + regular + `" exists and is not a directory (it is a regular file)`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse([]byte(c.src), "test.hcl", noEnv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got:\n%v\nfor:\n%s", c.want, err, c.src)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("not a *Error: %T", err)
			}
		})
	}
	// The limits themselves are accepted.
	for _, src := range []string{
		resources(`      cpu = 175921860` + "\n" + `      pids = 4194304`),
		probe(`      success_threshold = 2147483647`),
		"supervisor { log_dir = \"" + filepath.Join(regular+"-not-yet") + "\" }\n" + process(`    command = ["x"]`),
	} {
		if _, err := parse([]byte(src), "test.hcl", noEnv); err != nil {
			t.Errorf("refused:\n%s\n%v", src, err)
		}
	}
}

// TestSizeUnitsAreTheDocumentedOnes: the message for an unknown memory
// unit lists exactly the units docs/config.md documents, and each of
// them (with and without B, in any case) parses. 46b0b05's message listed
// B, KiB, MiB..., the reference "a Kubernetes/IEC unit".
func TestSizeUnitsAreTheDocumentedOnes(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	const documented = "`K`, `M`, `G`, `T` (powers of 1000) or `Ki`, `Mi`, `Gi`, `Ti` (powers of 1024), each optionally followed by `B`, in any case"
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), documented) {
		t.Fatalf("docs/config.md does not say %q", documented)
	}
	_, err = ParseSize("1Q")
	if err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(documented, "`", "")) {
		t.Fatalf("the unknown-unit message does not list the documented units: %v", err)
	}
	want := map[string]bool{"": true, "b": true}
	for _, u := range []string{"K", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"} {
		for _, v := range []string{u, u + "B", strings.ToLower(u), strings.ToUpper(u) + "b"} {
			if _, err := ParseSize("2" + v); err != nil {
				t.Errorf("the documented unit %q: %v", v, err)
			}
			want[strings.ToLower(v)] = true
		}
	}
	for u := range sizeUnits {
		if !want[u] {
			t.Errorf("ParseSize accepts %q, which docs/config.md does not document", u)
		}
	}
}

// TestManyProblemsAreCappedAndQuick: a file of 20,000 wrong lines is
// 20,000 problems; the first 100 are kept and shown, with the count of
// the others. On 46b0b05 all were kept, and HCL's writer read the whole
// file again for each snippet: 490,000 such lines (6 MB) held validate at
// 1.5 GB for more than ten minutes.
func TestManyProblemsAreCappedAndQuick(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for i := range 20_000 {
		fmt.Fprintf(&b, "a%d = 1\n", i)
	}
	_, err := Parse(b.Bytes(), "wrong.hcl")
	if err == nil {
		t.Fatal("20,000 unknown arguments parsed")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxDiagnostics+1 || lines[0] != `wrong.hcl:1:1: Unsupported argument: An argument named "a0" is not expected here. The top level of a file takes blocks supervisor, backoff, variable, group.` ||
		lines[MaxDiagnostics] != "... and 19900 more problems, not shown: fix these first." {
		t.Fatalf("%d lines, from %q to %q", len(lines), lines[0], lines[len(lines)-1])
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("not a *Error: %T", err)
	}
	start := time.Now()
	var out bytes.Buffer
	if err := ce.WriteText(&out, false); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Minute { // "not hours": generous for -race on a loaded machine
		t.Errorf("writing the problems took %v", took)
	}
	if !strings.HasSuffix(out.String(), "\n20000 problems found (the first 100 are shown).\n") || !strings.Contains(out.String(), "   1: a0 = 1") {
		t.Errorf("the problems, as written, end:\n%s", out.String()[max(out.Len()-400, 0):])
	}
}
