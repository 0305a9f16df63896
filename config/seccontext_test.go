package config

import (
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

func TestSecurityContextDecodes(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
group "g" {
  run_as_non_root = true
  seccomp         = "runtime/default"
  rlimits {
    nofile = "1024:4096"
    core   = 0
  }
  process "p" {
    command             = ["/bin/true"]
    user                = "nobody"
    supplemental_groups = ["video", "1001"]
    umask               = "0027"
    privileged          = false
    no_new_privileges   = true
    oom_score_adj       = -500
    capabilities {
      drop = ["ALL"]
      add  = ["CAP_NET_BIND_SERVICE"]
    }
    rlimits {
      nproc = "infinity"
    }
  }
}`), "t.hcl", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Groups[0]
	if !spec.IsSet(g.Security.RunAsNonRoot) || g.Security.Seccomp != "runtime/default" ||
		g.Security.Rlimits["nofile"] != (spec.Rlimit{Soft: 1024, Hard: 4096}) || g.Security.Rlimits["core"] != (spec.Rlimit{}) {
		t.Errorf("group context: %+v", g.Security)
	}
	s := g.Processes[0].Security
	if len(s.SupplementalGroups) != 2 || s.Umask == nil || *s.Umask != 0o27 || s.Privileged == nil || *s.Privileged ||
		!spec.IsSet(s.NoNewPrivileges) || s.OOMScoreAdj == nil || *s.OOMScoreAdj != -500 ||
		s.Capabilities == nil || s.Capabilities.Drop[0] != "ALL" || s.Capabilities.Add[0] != "CAP_NET_BIND_SERVICE" ||
		s.Rlimits["nproc"] != (spec.Rlimit{Soft: spec.RlimitInfinity, Hard: spec.RlimitInfinity}) {
		t.Errorf("process context: %+v", s)
	}
	eff := spec.EffectiveSecurity(&g, &g.Processes[0])
	if len(eff.Rlimits) != 3 || !spec.IsSet(eff.RunAsNonRoot) {
		t.Errorf("effective: %+v", eff)
	}
}

func TestSecurityContextErrorsPointAtTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, pos, want string }{
		{`
group "g" {
  process "p" {
    command = ["/bin/true"]
    umask = "0999"
  }
}`, "5:13", `umask must be an octal mode`},
		{`
group "g" {
  process "p" {
    command = ["/bin/true"]
    capabilities {
      add = ["CAP_FLY"]
    }
  }
}`, "6:13", `"CAP_FLY" is not a Linux capability`},
		{`
group "g" {
  rlimits {
    nofile = "many"
  }
  process "p" { command = ["/bin/true"] }
}`, "4:14", `nofile must be a limit`},
		{`
group "g" {
  rlimits {
    nofiles = 1
  }
  process "p" { command = ["/bin/true"] }
}`, "4:5", `Did you mean "nofile"?`},
		{`
group "g" {
  process "p" {
    command = ["/bin/true"]
    seccomp = "default"
  }
}`, "5:15", `seccomp "default" is not "runtime/default"`},
		{`
group "g" {
  process "p" {
    command = ["/bin/true"]
    oom_score_adj = 2000
  }
}`, "5:21", `oom_score_adj must be from -1000 to 1000`},
		{`
group "g" {
  process "p" {
    command = ["/bin/true"]
    user = "root"
    run_as_non_root = true
  }
}`, "6:23", `run_as_non_root refuses a process that runs as root`},
	} {
		e := mustFail(t, tc.src)
		ps := positions(e)
		found := false
		for i, l := range strings.Split(e.Error(), "\n") {
			found = found || ps[i] == tc.pos && strings.Contains(l, tc.want)
		}
		if !found {
			t.Errorf("want an error at %s containing %q, got:\n%s", tc.pos, tc.want, e.Error())
		}
	}
}
