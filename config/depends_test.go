package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

func TestParseDependsOn(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
supervisor { stop_order = "parallel" }
group "db" {
  process "db" { command = ["db"] }
}
group "app" {
  depends_on "db" { condition = "ready" }
  init "migrate" { command = ["migrate"] }
  process "api" {
    command = ["api"]
    depends_on "migrate" { condition = "completed" }
    depends_on "cache" {
      timeout = "2m"
      restart = true
    }
  }
  process "cache" { command = ["cache"] }
}
`)
	if cfg.Supervisor.StopOrder != spec.StopParallel {
		t.Errorf("stop_order = %q", cfg.Supervisor.StopOrder)
	}
	app := cfg.Groups[1]
	if want := []spec.Dependency{{Name: "db", Condition: spec.ConditionReady}}; !reflect.DeepEqual(app.DependsOn, want) {
		t.Errorf("group depends_on = %+v, want %+v", app.DependsOn, want)
	}
	want := []spec.Dependency{
		{Name: "migrate", Condition: spec.ConditionCompleted},
		{Name: "cache", Timeout: 2 * time.Minute, Restart: true},
	}
	if got := app.Processes[0].DependsOn; !reflect.DeepEqual(got, want) {
		t.Errorf("process depends_on = %+v, want %+v", got, want)
	}
	if c := want[1].EffectiveCondition(); c != spec.ConditionStarted {
		t.Errorf("default condition = %q, want started (compose's default)", c)
	}
	if got := cfg.Dependents("db"); !reflect.DeepEqual(got, []string{"app"}) {
		t.Errorf("Dependents(db) = %v", got)
	}
}

// W2: what validate and up refuse, each at the file:line:col of the
// depends_on block (or its condition) that is wrong.
func TestDependsOnRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src, pos, msg string
	}{
		{"process cycle", `
group "g" {
  process "a" {
    command = ["a"]
    depends_on "b" {}
  }
  process "b" {
    command = ["b"]
    depends_on "c" {}
  }
  process "c" {
    command = ["c"]
    depends_on "a" { condition = "ready" }
  }
}`, "5:5", "cycle: a -> b -> c -> a"},
		{"group cycle", `
group "x" {
  depends_on "y" {}
  process "p" { command = ["p"] }
}
group "y" {
  depends_on "x" {}
  process "p" { command = ["p"] }
}`, "3:3", "cycle: groups x -> y -> x"},
		{"unknown process", `
group "g" {
  process "a" {
    command = ["a"]
    depends_on "nope" {}
  }
}`, "5:5", `"nope", which is neither a process nor an init of group "g"`},
		{"unknown group", `
group "g" {
  depends_on "nope" {}
  process "a" { command = ["a"] }
}`, "3:3", `"nope", which is not a group`},
		{"self", `
group "g" {
  process "a" {
    command = ["a"]
    depends_on "a" {}
  }
}`, "5:5", "cannot depend on itself"},
		{"bad condition", `
group "g" {
  process "a" { command = ["a"] }
  process "b" {
    command = ["b"]
    depends_on "a" { condition = "healthy" }
  }
}`, "6:34", `condition "healthy" is not one of`},
		{"completed on always", `
group "g" {
  process "a" { command = ["a"] }
  process "b" {
    command = ["b"]
    depends_on "a" { condition = "completed" }
  }
}`, "6:34", "restarted always and never completes"},
		{"completed on a group restarted always", `
group "x" {
  process "p" { command = ["p"] }
}
group "y" {
  depends_on "x" { condition = "completed" }
  process "p" { command = ["p"] }
}`, "6:32", `its process "p" is restarted always`},
		{"completed on a sidecar", `
group "g" {
  init "side" {
    command        = ["s"]
    restart_policy = "always"
  }
  process "b" {
    command = ["b"]
    depends_on "side" { condition = "completed" }
  }
}`, "9:37", "it is a sidecar"},
		{"init on a main", `
group "g" {
  init "i" {
    command = ["i"]
    depends_on "a" {}
  }
  process "a" { command = ["a"] }
}`, "5:5", "starts only after it"},
		{"negative timeout", `
group "g" {
  process "a" { command = ["a"] }
  process "b" {
    command = ["b"]
    depends_on "a" { timeout = "-1s" }
  }
}`, "6:32", "timeout must not be negative"},
		{"duplicate", `
group "g" {
  process "a" { command = ["a"] }
  process "b" {
    command = ["b"]
    depends_on "a" {}
    depends_on "a" {}
  }
}`, "6:5", "duplicate depends_on"},
		{"bad stop_order", `
supervisor { stop_order = "reverse" }
group "g" {
  process "a" { command = ["a"] }
}`, "2:27", `stop_order "reverse" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := mustFail(t, tc.src)
			if len(e.Diagnostics) != 1 {
				t.Fatalf("want one problem, got %d:\n%v", len(e.Diagnostics), e)
			}
			if got := positions(e)[0]; got != tc.pos {
				t.Errorf("at %s, want %s: %v", got, tc.pos, e)
			}
			if !strings.Contains(e.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", e.Error(), tc.msg)
			}
		})
	}
}
