package spec

import (
	"slices"
	"strings"
	"testing"
)

func TestEffectiveSecurityOverridesFieldByField(t *testing.T) {
	t.Parallel()
	umask := uint32(0o027)
	g := &Group{Security: Security{
		RunAsNonRoot: Bool(true), NoNewPrivileges: Bool(true), Umask: &umask, Seccomp: SeccompRuntimeDefault,
		Rlimits: map[string]Rlimit{"nofile": {1024, 4096}, "core": {0, 0}},
	}}
	p := &Process{Security: Security{
		NoNewPrivileges: Bool(false), Seccomp: SeccompUnconfined,
		Rlimits: map[string]Rlimit{"nofile": {64, 64}},
	}}
	got := EffectiveSecurity(g, p)
	if !IsSet(got.RunAsNonRoot) || got.Umask == nil || *got.Umask != 0o027 {
		t.Errorf("the group's run_as_non_root and umask are lost: %+v", got)
	}
	if got.NoNewPrivileges == nil || *got.NoNewPrivileges || got.Seccomp != SeccompUnconfined {
		t.Errorf("the process's no_new_privileges = false and seccomp do not override the group's: %+v", got)
	}
	if got.Rlimits["nofile"] != (Rlimit{64, 64}) || got.Rlimits["core"] != (Rlimit{0, 0}) {
		t.Errorf("rlimits do not merge by name: %v", got.Rlimits)
	}
	if len(g.Security.Rlimits) != 2 || g.Security.Rlimits["nofile"] != (Rlimit{1024, 4096}) {
		t.Errorf("EffectiveSecurity changed the group's map: %v", g.Security.Rlimits)
	}
}

func TestSecurityValidation(t *testing.T) {
	t.Parallel()
	big := uint32(0o1000)
	oom := 1001
	cfg := &Config{Groups: []Group{{
		Name:     "g",
		Security: Security{RunAsNonRoot: Bool(true)},
		Processes: []Process{
			{Name: "ok", Command: []string{"x"}, User: "1000", Security: Security{
				Capabilities: &Capabilities{Drop: []string{"ALL"}, Add: []string{"net_bind_service", "CAP_CHOWN"}},
				Seccomp:      SeccompRuntimeDefault, Rlimits: map[string]Rlimit{"nofile": {1, 2}},
			}},
			{Name: "bad", Command: []string{"x"}, User: "root", Security: Security{
				Umask: &big, OOMScoreAdj: &oom, Seccomp: "relative.json",
				Capabilities: &Capabilities{Add: []string{"CAP_FLY"}},
				Rlimits:      map[string]Rlimit{"files": {1, 1}, "core": {2, 1}},
			}},
		},
	}}}
	err := cfg.Validate()
	es, _ := AsErrors(err)
	var paths []string
	for _, e := range es {
		paths = append(paths, strings.Join(e.Path, "."))
	}
	want := []string{
		"group.g.process.bad.umask", "group.g.process.bad.capabilities.add", "group.g.process.bad.seccomp",
		"group.g.process.bad.rlimits.core", "group.g.process.bad.rlimits.files", "group.g.process.bad.oom_score_adj",
		"group.g.process.bad.user",
	}
	for _, w := range want {
		if !slices.Contains(paths, w) {
			t.Errorf("no error at %s; got:\n%v", w, err)
		}
	}
	for _, p := range paths {
		if strings.Contains(p, ".ok.") {
			t.Errorf("a valid context is refused: %v", err)
		}
	}
}

func TestDiffRestartsWhatAGroupSecurityChanges(t *testing.T) {
	t.Parallel()
	mk := func(nnp bool) *Config {
		return &Config{Groups: []Group{{Name: "g", Security: Security{NoNewPrivileges: Bool(nnp)}, Processes: []Process{
			{Name: "inherits", Command: []string{"x"}},
			{Name: "own", Command: []string{"x"}, Security: Security{NoNewPrivileges: Bool(true)}},
		}}}}
	}
	c := Diff(mk(false), mk(true))
	gc := c.Groups["g"]
	if len(c.ChangedGroups) != 0 || !slices.Equal(gc.Changed, []string{"inherits"}) || !slices.Equal(gc.Unchanged, []string{"own"}) {
		t.Errorf("Diff = %+v, %+v; want only the process that inherits the change restarted", c, gc)
	}
	old, new := mk(false), mk(false)
	new.Groups[0].Processes[1].Security.Seccomp = SeccompRuntimeDefault
	if gc := Diff(old, new).Groups["g"]; !slices.Equal(gc.Changed, []string{"own"}) {
		t.Errorf("a process's seccomp change does not restart it: %+v", gc)
	}
}

func TestUmaskAndRlimitForms(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint32{"0027": 0o27, "027": 0o27, "0o077": 0o77, "0": 0} {
		if got, err := ParseUmask(in); err != nil || got != want {
			t.Errorf("ParseUmask(%q) = %o, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "0800", "01000", "rwx"} {
		if _, err := ParseUmask(bad); err == nil {
			t.Errorf("ParseUmask(%q) accepted", bad)
		}
	}
	if FormatUmask(0o27) != "0027" || FormatUmask(0) != "0000" {
		t.Errorf("FormatUmask: %q %q", FormatUmask(0o27), FormatUmask(0))
	}
	for in, want := range map[string]Rlimit{"1024": {1024, 1024}, "1024:4096": {1024, 4096}, "0:infinity": {0, RlimitInfinity}, "unlimited": {RlimitInfinity, RlimitInfinity}} {
		if got, err := ParseRlimit(in); err != nil || got != want {
			t.Errorf("ParseRlimit(%q) = %v, %v", in, got, err)
		}
		if got, _ := ParseRlimit(in); in != "unlimited" && got.String() != in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), in)
		}
	}
}
