package config

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

// writeFiles writes name → content under dir, making directories.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mustLoad(t *testing.T, o Options, paths ...string) *spec.Config {
	t.Helper()
	if o.LookupEnv == nil {
		o.LookupEnv = noEnv
	}
	cfg, err := o.Load(paths...)
	if err != nil {
		t.Fatalf("Load(%v): %v", paths, err)
	}
	return cfg
}

func mustNotLoad(t *testing.T, o Options, paths ...string) *Error {
	t.Helper()
	if o.LookupEnv == nil {
		o.LookupEnv = noEnv
	}
	_, err := o.Load(paths...)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Load(%v) = %v (%T), want a *config.Error", paths, err, err)
	}
	return ce
}

func process(t *testing.T, cfg *spec.Config, group, name string) spec.Process {
	t.Helper()
	for _, g := range cfg.Groups {
		if g.Name != group {
			continue
		}
		for _, p := range append(slices.Clone(g.Init), g.Processes...) {
			if p.Name == name {
				return p
			}
		}
	}
	t.Fatalf("no process %s/%s in %+v", group, name, cfg.Groups)
	return spec.Process{}
}

func TestParseEnvFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src string
		want      map[string]string
	}{
		{"plain", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}},
		{"comments and blanks", "# c\n\n  ; systemd's comment\nA=1\n\n", map[string]string{"A": "1"}},
		{"export prefix", "export A=1\nexport\tB=2\nexporter=3\n", map[string]string{"A": "1", "B": "2", "exporter": "3"}},
		{"blanks around", "  A =  x y  \n", map[string]string{"A": "x y"}},
		{"inline comment after a blank", "A=x # note\nB=x#not-a-comment\n", map[string]string{"A": "x", "B": "x#not-a-comment"}},
		{"single quotes are literal", `A='a\nb $X # c'` + "\n", map[string]string{"A": `a\nb $X # c`}},
		{"double quotes take escapes", `A="a\nb\t\"q\" \\ \$ \x"` + "\n", map[string]string{"A": "a\nb\t\"q\" \\ $ \\x"}},
		{"quoted spans lines", "A=\"line1\nline2\"\nB='x\ny'\nC=3\n", map[string]string{"A": "line1\nline2", "B": "x\ny", "C": "3"}},
		{"comment after a quote", `A="x" # note` + "\n", map[string]string{"A": "x"}},
		{"empty values", "A=\nB=''\nC=\"\"", map[string]string{"A": "", "B": "", "C": ""}},
		{"no expansion", "A=${HOME}\n", map[string]string{"A": "${HOME}"}},
		{"later wins", "A=1\nA=2\n", map[string]string{"A": "2"}},
		{"CRLF", "A=1\r\nB=\"2\"\r\n", map[string]string{"A": "1", "B": "2"}},
		{"equals in value", "URL=a=b=c\n", map[string]string{"URL": "a=b=c"}},
		{"compose names", "my.var-1=x\n", map[string]string{"my.var-1": "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vars, err := parseEnvFile([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, v := range vars {
				got[v.key] = v.value
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseEnvFileErrorsNameTheLineNotTheValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src string
		line      int
		msg       string
	}{
		{"no equals", "A=1\n\nhunter2\n", 3, "expected KEY=VALUE"},
		{"bad name", "A=1\n1X=hunter2\n", 2, `"1X" is not a variable name`},
		{"space in name", "MY VAR=hunter2\n", 1, `"MY VAR" is not a variable name`},
		{"empty name", "=hunter2\n", 1, `"" is not a variable name`},
		{"unclosed quote", "A=1\nB=\"hunter2\nC=3\n", 2, "never closed"},
		{"text after quote", "A=1\n\nB='hunter2' x\n", 3, "after the closing quote"},
		{"NUL", "A=1\nB=hun\x00ter2\n", 2, "NUL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseEnvFile([]byte(c.src))
			var le *envFileError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want an envFileError", err)
			}
			if le.line != c.line || !strings.Contains(le.msg, c.msg) {
				t.Errorf("got line %d %q, want line %d containing %q", le.line, le.msg, c.line, c.msg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the value: %v", err)
			}
		})
	}
}

// TestEnvMergeOrder pins the documented order: podsup's own environment
// (outside config) < group env_file (in order) < group env < process
// env_file (in order) < process env. Relative paths start at the
// directory of the file that names them, not podsup's working directory.
func TestEnvMergeOrder(t *testing.T) {
	// Not parallel: it changes the working directory (process-wide).
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"conf/podsup.hcl": `
group "g" {
  env_file = ["env/group1.env", "env/group2.env"]
  env = { G_INLINE = "group-inline", P_INLINE = "group-inline" }
  init "setup" {
    command = ["/bin/true"]
  }
  process "a" {
    command  = ["/bin/true"]
    env_file = ["process.env", "` + filepath.Join(dir, "abs.env") + `"]
    env      = { P_INLINE = "process-inline" }
  }
  process "b" {
    command  = ["/bin/true"]
    env_file = "process.env"
  }
}
`,
		"conf/env/group1.env": "G1=1\nG12=from-group1\nG_INLINE=group1\nP_FILE=group1\n",
		"conf/env/group2.env": "G12=from-group2\n",
		"conf/process.env":    "P_FILE=process\nP_INLINE=process-file\nG_INLINE=process-file\n",
		"abs.env":             "ABS=yes\n",
	})
	t.Chdir(t.TempDir()) // relative paths must not depend on the working directory
	cfg := mustLoad(t, Options{}, filepath.Join(dir, "conf/podsup.hcl"))
	groupOnly := map[string]string{"G1": "1", "G12": "from-group2", "G_INLINE": "group-inline", "P_FILE": "group1", "P_INLINE": "group-inline"}
	for name, want := range map[string]map[string]string{
		"setup": groupOnly,
		"a": {"G1": "1", "G12": "from-group2", "G_INLINE": "process-file", "P_FILE": "process",
			"P_INLINE": "process-inline", "ABS": "yes"},
		"b": {"G1": "1", "G12": "from-group2", "G_INLINE": "process-file", "P_FILE": "process", "P_INLINE": "process-file"},
	} {
		if got := process(t, cfg, "g", name).Env; !maps.Equal(got, want) {
			t.Errorf("%s: Env = %q\nwant %q", name, got, want)
		}
	}
}

func TestEnvFileErrorsNameTheFileLineAndTheEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"podsup.hcl": `group "g" {
  process "a" {
    command  = ["/bin/true"]
    env_file = ["ok.env",
                "bad.env"]
  }
  process "b" {
    command  = ["/bin/true"]
    env_file = ["missing.env", "-optional-missing.env", "-ok.env"]
  }
}
`,
		"ok.env":  "A=1\n",
		"bad.env": "A=1\n# fine\nPASSWORD hunter2\n",
	})
	ce := mustNotLoad(t, Options{}, filepath.Join(dir, "podsup.hcl"))
	msg := ce.Error()
	if got, want := positions(ce), []string{"5:17", "9:17"}; !slices.Equal(got, want) {
		t.Errorf("positions = %v, want %v:\n%s", got, want, msg)
	}
	if !strings.Contains(msg, filepath.Join(dir, "bad.env")+":3: expected KEY=VALUE") {
		t.Errorf("the bad line is not named as bad.env:3:\n%s", msg)
	}
	if !strings.Contains(msg, filepath.Join(dir, "missing.env")) || !strings.Contains(msg, "no such file") {
		t.Errorf("the missing file is not named:\n%s", msg)
	}
	if strings.Contains(msg, "optional-missing") {
		t.Errorf("an optional missing file is an error:\n%s", msg)
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("the error shows an env file's value:\n%s", msg)
	}
	var b strings.Builder
	_ = ce.WriteText(&b, false)
	if strings.Contains(b.String(), "hunter2") {
		t.Errorf("the printed diagnostics show an env file's value:\n%s", b.String())
	}
}

func TestEnvFileMustBeARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"podsup.hcl": `group "g" {
  process "a" {
    command  = ["/bin/true"]
    env_file = ["/dev/zero", "-` + dir + `"]
  }
}
`})
	ce := mustNotLoad(t, Options{}, filepath.Join(dir, "podsup.hcl"))
	if n := strings.Count(ce.Error(), "not a regular file"); n != 2 {
		t.Errorf("want /dev/zero and the directory refused as not regular files:\n%s", ce)
	}
}

// TestChangedEnvFileChangesOnlyItsProcesses is what a reload decides on:
// a second Load sees the edited file, and spec.Diff names exactly the
// processes whose resolved environment changed.
func TestChangedEnvFileChangesOnlyItsProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"podsup.hcl": `
group "g" {
  process "uses" {
    command  = ["/bin/true"]
    env_file = ["app.env"]
  }
  process "other" {
    command  = ["/bin/true"]
    env_file = ["other.env"]
  }
}
group "h" {
  env_file = ["app.env"]
  process "inherits" {
    command = ["/bin/true"]
  }
  process "overrides" {
    command = ["/bin/true"]
    env     = { TOKEN = "fixed" }
  }
}
`,
		"app.env":   "TOKEN=1\n",
		"other.env": "X=1\n",
	})
	path := filepath.Join(dir, "podsup.hcl")
	before := mustLoad(t, Options{}, path)
	if ch := spec.Diff(before, mustLoad(t, Options{}, path)); !ch.Empty() {
		t.Fatalf("loading twice differs: %+v", ch)
	}
	writeFiles(t, dir, map[string]string{"app.env": "TOKEN=2\n"})
	ch := spec.Diff(before, mustLoad(t, Options{}, path))
	if len(ch.AddedGroups)+len(ch.RemovedGroups)+len(ch.ChangedGroups) != 0 {
		t.Errorf("groups changed: %+v", ch)
	}
	if got := ch.Groups["g"].Changed; !slices.Equal(got, []string{"uses"}) {
		t.Errorf("changed in g = %v, want [uses]", got)
	}
	if got := ch.Groups["h"].Changed; !slices.Equal(got, []string{"inherits"}) {
		t.Errorf("changed in h = %v, want [inherits] (overrides sets TOKEN itself)", got)
	}
}

// TestSeveralFilesAndADirectoryLoadAsOne: a directory stands for its
// *.hcl files in lexical order (not other files, not subdirectories);
// variables and the top-level backoff apply across files.
func TestSeveralFilesAndADirectoryLoadAsOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"base.hcl": `
variable "cmd" { default = "/bin/true" }
backoff { initial = "1s" }
group "base" {
  process "p" { command = [var.cmd] }
}
`,
		"conf.d/20-b.hcl":          "group \"b\" {\n  process \"p\" { command = [var.cmd] }\n}\n",
		"conf.d/10-a.hcl":          "group \"a\" {\n  process \"p\" { command = [var.cmd, \"a\"] }\n}\n",
		"conf.d/30-c.hcl":          "group \"c\" {\n  process \"p\" { command = [\"/bin/true\"] }\n}\n",
		"conf.d/README":            `not HCL`,
		"conf.d/40-d.hcl.disabled": `not HCL`,
		"conf.d/.hidden.hcl":       `not HCL`,
		"conf.d/sub.hcl/x.hcl":     `not HCL`,
		"empty/README":             ``,
	})
	cfg := mustLoad(t, Options{}, filepath.Join(dir, "base.hcl"), filepath.Join(dir, "conf.d"), filepath.Join(dir, "empty"))
	var names []string
	for _, g := range cfg.Groups {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, []string{"base", "a", "b", "c"}) {
		t.Errorf("groups = %v, want base then the directory's in lexical order", names)
	}
	if got := process(t, cfg, "a", "p").Command; !slices.Equal(got, []string{"/bin/true", "a"}) {
		t.Errorf("a variable of base.hcl in conf.d/10-a.hcl: command = %v", got)
	}
	if cfg.Backoff.Initial.String() != "1s" {
		t.Errorf("top-level backoff = %v, want base.hcl's", cfg.Backoff)
	}
}

func TestOnlyEmptyDirectoriesAreAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"conf.d/app.conf": minimal})
	_, err := Options{LookupEnv: noEnv}.Load(filepath.Join(dir, "conf.d"))
	if !errors.Is(err, ErrNoFiles) || !strings.Contains(err.Error(), "no *.hcl file in "+filepath.Join(dir, "conf.d")) {
		t.Errorf("Load(a directory without *.hcl) = %v, want ErrNoFiles naming it", err)
	}
}

func TestSameGroupInTwoFilesNamesBothPlaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.hcl": "group \"web\" {\n  process \"p\" { command = [\"/bin/true\"] }\n}\n",
		"b.hcl": "\n\ngroup \"web\" {\n  process \"q\" { command = [\"/bin/true\"] }\n}\n",
	})
	ce := mustNotLoad(t, Options{}, filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl"))
	msg := ce.Error()
	if !strings.Contains(msg, filepath.Join(dir, "b.hcl")+":3:1: ") || !strings.Contains(msg, "The first is at "+filepath.Join(dir, "a.hcl")+":1:1") {
		t.Errorf("want the duplicate at b.hcl:3:1 naming a.hcl:1:1:\n%s", msg)
	}
}

// TestSupervisorBlockInTwoFilesIsAnError: settings of podsup itself are
// written once; two blocks are an error naming both, not a merge.
func TestSupervisorBlockInTwoFilesIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.hcl": "supervisor {\n  log_level = \"debug\"\n}\n" + minimal,
		"b.hcl": "\nsupervisor {\n  log_format = \"json\"\n}\n",
	})
	ce := mustNotLoad(t, Options{}, filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl"))
	msg := ce.Error()
	if !strings.Contains(msg, filepath.Join(dir, "b.hcl")+":2:1: Duplicate supervisor block") || !strings.Contains(msg, filepath.Join(dir, "a.hcl")+":1:1") {
		t.Errorf("want the second supervisor block at b.hcl:2:1 naming a.hcl:1:1:\n%s", msg)
	}
}

func TestFindAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.hcl": minimal, "d/b.hcl": minimal})
	a, d := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "d")
	if got, err := FindAll([]string{a, d}); err != nil || !slices.Equal(got, []string{a, d}) {
		t.Errorf("FindAll = %v, %v", got, err)
	}
	if _, err := FindAll([]string{a, filepath.Join(dir, "nope")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FindAll(missing) = %v, want ErrNotExist", err)
	}
	saved := DefaultPaths
	defer func() { DefaultPaths = saved }()
	DefaultPaths = []string{a}
	if got, err := FindAll(nil); err != nil || !slices.Equal(got, []string{a}) {
		t.Errorf("FindAll(nil) = %v, %v; want the default", got, err)
	}
}

const withVariables = `
variable "port" { default = "8080" }
variable "cmd" {
  description = "the program"
  default     = "/bin/true"
}
group "g" {
  process "p" {
    command = [var.cmd, var.port]
  }
}
`

// TestVariablePrecedence pins Terraform's and Nomad's order: default <
// PODSUP_VAR_name < var files (in order) < --var (in order).
func TestVariablePrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"podsup.hcl": withVariables,
		"one.vars":   "port = 1\n",
		"two.vars":   "port = \"2\"\ncmd = \"/bin/echo\"\n",
	})
	path := filepath.Join(dir, "podsup.hcl")
	env := func(string) (string, bool) { return "", false }
	envSet := func(name string) (string, bool) { return "env", name == "PODSUP_VAR_port" }
	one, two := filepath.Join(dir, "one.vars"), filepath.Join(dir, "two.vars")
	for _, c := range []struct {
		name string
		o    Options
		want []string
	}{
		{"defaults", Options{LookupEnv: env}, []string{"/bin/true", "8080"}},
		{"environment", Options{LookupEnv: envSet}, []string{"/bin/true", "env"}},
		{"var file over environment", Options{LookupEnv: envSet, VarFiles: []string{one}}, []string{"/bin/true", "1"}},
		{"later var file", Options{LookupEnv: envSet, VarFiles: []string{one, two}}, []string{"/bin/echo", "2"}},
		{"--var over var files", Options{LookupEnv: envSet, VarFiles: []string{two, one}, Vars: []string{"port=3"}}, []string{"/bin/echo", "3"}},
		{"later --var", Options{LookupEnv: envSet, Vars: []string{"port=3", "port=4=x"}}, []string{"/bin/true", "4=x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := process(t, mustLoad(t, c.o, path), "g", "p").Command; !reflect.DeepEqual(got, c.want) {
				t.Errorf("command = %q, want %q", got, c.want)
			}
		})
	}
}

func TestVariableErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"podsup.hcl": `variable "unset" {}
variable "port" { default = 1 }
variable "port" { default = 2 }
group "g" {
  process "p" {
    command = ["/bin/true", var.unset, var.nope]
  }
}
`,
		"bad.vars": "port = 1\n\ntypo = 2\n",
	})
	ce := mustNotLoad(t, Options{Vars: []string{"undeclared=1", "novalue"}, VarFiles: []string{filepath.Join(dir, "bad.vars")}},
		filepath.Join(dir, "podsup.hcl"))
	msg := ce.Error()
	for _, want := range []string{
		filepath.Join(dir, "podsup.hcl") + `:1:1: No value for variable: Variable "unset" has no default`,
		"PODSUP_VAR_unset",
		filepath.Join(dir, "podsup.hcl") + `:3:1: Duplicate variable: Variable "port" is declared twice; the first is at ` + filepath.Join(dir, "podsup.hcl") + ":2:1",
		filepath.Join(dir, "podsup.hcl") + `:6:43: Unsupported attribute`, // var.nope
		`"nope"`,
		filepath.Join(dir, "bad.vars") + `:3:1: Undeclared variable: No variable "typo"`,
		`--var undeclared=...: no variable "undeclared" is declared`,
		`--var "novalue" is not NAME=VALUE`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

func TestVariablesInParseUseTheEnvironment(t *testing.T) {
	// Not parallel: it sets an environment variable (process-wide).
	t.Setenv("PODSUP_VAR_port", "9999")
	cfg, err := Parse([]byte(withVariables), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := process(t, cfg, "g", "p").Command; got[1] != "9999" {
		t.Errorf("command = %q, want PODSUP_VAR_port's 9999", got)
	}
}
