package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

// GROUP/INIT names an init process as GROUP/PROCESS names a process
// (kubectl exec -c takes an init container too): the command gets the
// init's user, group, environment and working directory. A name that is
// neither is refused.
func TestExecCmdTakesInitProcesses(t *testing.T) {
	t.Parallel()
	g := &spec.Group{
		Name: "web",
		Init: []spec.Process{{Name: "migrate", Command: []string{"true"}, User: "65534", Group: "65533",
			WorkingDir: "/srv", Env: map[string]string{"PODSUP_EXEC_INIT": "yes"}}},
		Processes: []spec.Process{{Name: "app", Command: []string{"true"}, WorkingDir: "/app"}},
	}
	c, err := execCmd(g, "migrate", []string{"id"})
	if err != nil {
		t.Fatalf("exec web/migrate: %v", err)
	}
	if c.User != "65534" || c.Group != "65533" || c.Dir != "/srv" || !slices.Contains(c.Env, "PODSUP_EXEC_INIT=yes") {
		t.Errorf("exec web/migrate runs as user %q group %q in %q (env has the init's: %v), want the init's context",
			c.User, c.Group, c.Dir, slices.Contains(c.Env, "PODSUP_EXEC_INIT=yes"))
	}
	if c, err := execCmd(g, "app", []string{"id"}); err != nil || c.Dir != "/app" {
		t.Errorf("exec web/app: %v, dir %q; want the process's /app", err, c.Dir)
	}
	if _, err := execCmd(g, "nope", []string{"id"}); err == nil || !strings.Contains(err.Error(), `no process "nope"`) {
		t.Errorf("exec web/nope: %v, want an error naming the missing process", err)
	}
}
