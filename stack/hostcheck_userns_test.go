package stack

import (
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

// validate warns of a user_namespace whose subid_user has no range, with
// the line to add.
func TestCheckHostWarnsOfAMissingIDRange(t *testing.T) {
	cfg := &spec.Config{Groups: []spec.Group{{Name: "g",
		Sandbox: &spec.Sandbox{UserNamespace: true, SubIDUser: "podsup-no-such-range"}}}}
	var found bool
	for _, e := range CheckHost(cfg, nil) {
		if strings.Join(e.Path, ".") == "group.g.sandbox.user_namespace" {
			found = strings.Contains(e.Msg, "/etc/subuid") && strings.Contains(e.Msg, "podsup-no-such-range:<start>:<count>")
			if !found {
				t.Errorf("warning %q does not name the file and the line to add", e.Msg)
			}
		}
	}
	if !found {
		t.Errorf("no warning at group.g.sandbox.user_namespace: %v", CheckHost(cfg, nil))
	}
}
