package spec

import "testing"

// A reload that changes only a config volume's files or its
// restart_on_change changes no group: the stack rewrites the files (and
// reads restart_on_change from the new configuration) under the running
// processes.
func TestDiffOfVolumeFilesAndRestartOnChange(t *testing.T) {
	cfg := func(content string, restart bool) Config {
		return Config{Groups: []Group{{Name: "g",
			Sandbox: &Sandbox{Namespaces: []string{"mount"}},
			Volumes: []Volume{{Name: "c", Type: VolumeConfig, RestartOnChange: restart, Files: []VolumeFile{{Name: "f", Content: content}}}},
			Processes: []Process{{Name: "a", Command: []string{"a"},
				VolumeMounts: []VolumeMount{{Volume: "c", Path: "/c"}}}},
		}}}
	}
	old := cfg("v1", false)
	for _, next := range []Config{cfg("v2", false), cfg("v1", true), cfg("v2", true)} {
		if ch := Diff(&old, &next); !ch.Empty() {
			t.Errorf("%+v: changes %+v, want none", next.Groups[0].Volumes[0], ch)
		}
	}
}
