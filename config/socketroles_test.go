package config

import (
	"slices"
	"strings"
	"testing"
)

func TestSocketGroupRoles(t *testing.T) {
	cfg, err := Parse([]byte(`supervisor {
  socket_group = "ops"
  socket_group_roles = ["read", "exec"]
}
`), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Supervisor.SocketGroupRoles, []string{"read", "exec"}) {
		t.Fatalf("roles %v", cfg.Supervisor.SocketGroupRoles)
	}
	for src, want := range map[string]string{
		"supervisor {\n  socket_group = \"ops\"\n  socket_group_roles = [\"read\", \"root\"]\n}\n": `p.hcl:3:24: Invalid socket_group_roles: socket_group_roles names an unknown role "root"; the roles are "read", "operate", "logs", "exec".`,
		"supervisor {\n  socket_group_roles = [\"exec\"]\n}\n":                                     "p.hcl:2:24: Invalid socket_group_roles: socket_group_roles grants roles to the members of socket_group, which is not set",
	} {
		_, err := Parse([]byte(src), "p.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
