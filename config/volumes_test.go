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

// restart_on_change is read for a config or secret volume and refused,
// at its file:line:col, on a volume whose files a reload never rewrites.
func TestRestartOnChange(t *testing.T) {
	cfg, err := Parse([]byte(`group "g" {
  volume "c" {
    type              = "config"
    restart_on_change = true
  }
  process "a" {
    command = ["a"]
  }
}
`), "v.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Groups[0].Volumes[0].RestartOnChange {
		t.Error("restart_on_change = true was not read")
	}
	_, err = Parse([]byte(`group "g" {
  volume "c" {
    type              = "empty_dir"
    restart_on_change = true
  }
  process "a" {
    command = ["a"]
  }
}
`), "v.hcl")
	if err == nil || !strings.Contains(err.Error(), "v.hcl:4:25") || !strings.Contains(err.Error(), "restart_on_change is a config's or a secret's") {
		t.Errorf("restart_on_change on an empty_dir: %v", err)
	}
}

// fs_group and a volume's mode are read, and a mode is refused, at its
// file:line:col, where no file has it.
func TestFSGroupAndMode(t *testing.T) {
	cfg, err := Parse([]byte(`group "g" {
  fs_group = "app"
  volume "s" {
    type = "secret"
    mode = "0440"
  }
  process "a" {
    command = ["a"]
  }
}
`), "v.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.Groups[0]; g.FSGroup != "app" || g.Volumes[0].Mode != 0o440 {
		t.Errorf("fs_group %q, mode %o", g.FSGroup, g.Volumes[0].Mode)
	}
	for _, c := range []struct{ src, at, msg string }{
		{"type = \"empty_dir\"\n    mode = \"0440\"", "v.hcl:4:12", "mode is a config's or a secret's"},
		{"type = \"secret\"\n    mode = \"0999\"", "v.hcl:4:12", "mode must be an octal mode"},
	} {
		_, err := Parse([]byte("group \"g\" {\n  volume \"s\" {\n    "+c.src+"\n  }\n  process \"a\" {\n    command = [\"a\"]\n  }\n}\n"), "v.hcl")
		if err == nil || !strings.Contains(err.Error(), c.at) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %s at %s", c.src, err, c.msg, c.at)
		}
	}
}
