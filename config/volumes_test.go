package config

import (
	"strings"
	"testing"
)

// A volume_mount in a group whose sandbox has no mount namespace is
// refused at the volume_mount's file:line:col, and so are two different
// mounts of one path.
func TestVolumeMountsRefusedWhereTheyCannotBeMade(t *testing.T) {
	src := `group "g" {
  sandbox {
    namespaces = ["pid"]
  }
  volume "c" {
    type = "empty_dir"
  }
  volume "d" {
    type = "empty_dir"
  }
  process "a" {
    command = ["a"]
    volume_mount {
      volume = "c"
      path   = "/c"
    }
  }
  process "b" {
    command = ["b"]
    volume_mount {
      volume = "d"
      path   = "/c"
    }
  }
}
`
	_, err := Parse([]byte(src), "v.hcl")
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{"v.hcl:14:16", "Invalid volume", "needs the group's sandbox to have the \"mount\" namespace", "v.hcl:22:16", "/c is also mounted by process a"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error has no %q:\n%s", want, msg)
		}
	}
}
