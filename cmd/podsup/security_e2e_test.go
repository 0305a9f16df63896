package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/testusers"
	"github.com/podsup/podsup/supervisor"
)

// securityE2EConfig: "locked" is issue #29's acceptance process (drop
// ALL, no_new_privileges, runtime/default, a read-only root), "open" a
// process with nothing narrowed, and "ambient" a real non-root user that
// adds NET_BIND_SERVICE and a supplementary group it is not a member of.
const securityE2EConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "locked" {
  termination_grace_period = "5s"
  sandbox {
    namespaces                = ["pid", "mount"]
    read_only_root_filesystem = true
    mount {
      type   = "proc"
      target = "/proc"
    }
  }
  process "app" {
    command           = ["sleep", "100000"]
    no_new_privileges = true
    seccomp           = "runtime/default"
    capabilities {
      drop = ["ALL"]
    }
    # A failed post_start kills the process: it runs only if the hook
    # runs as narrowed as the process, as the probe below.
    post_start {
      exec {
        command = ["sh", "-c", "grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/self/status && grep -q '^Seccomp:[[:space:]]*2$' /proc/self/status"]
      }
    }
    # Ready only if the probe itself runs as narrowed as the process
    # (kubelet runs an exec probe in the container).
    readiness_probe {
      exec {
        command = ["sh", "-c", "grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/self/status && grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status && grep -q '^Seccomp:[[:space:]]*2$' /proc/self/status"]
      }
      period = "1s"
    }
  }
}
group "open" {
  termination_grace_period = "5s"
  process "app" {
    command = ["sleep", "100001"]
  }
}
group "boxed" {
  termination_grace_period = "5s"
  sandbox {
    namespaces = ["pid", "mount"]
    mount {
      type   = "proc"
      target = "/proc"
    }
  }
  process "app" {
    command = ["sleep", "100003"]
  }
}
group "ambient" {
  termination_grace_period = "5s"
  process "app" {
    command             = ["sleep", "100002"]
    user                = "USER"
    supplemental_groups = ["GROUP"]
    capabilities {
      add = ["NET_BIND_SERVICE"]
    }
  }
}
`

// execedStatus is /proc/PID/status as a map, once the process runs
// sleep: a start with a seccomp filter that denies clone3 runs podsup's
// pre-exec shim first, which installs the filter just before its exec.
func execedStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	out := map[string]string{}
	if !eventually(func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		clear(out)
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				out[k] = strings.TrimSpace(v)
			}
		}
		return out["Name"] == "sleep"
	}) {
		t.Fatalf("pid %d never ran sleep: %v", pid, out)
	}
	return out
}

// Issue #29's acceptance: a process with capabilities { drop = ["ALL"] },
// no_new_privileges, seccomp = "runtime/default" and a read-only root
// shows that in /proc and in podsup describe, and podsup security rates
// it far above an unconfined one; a non-root user's added capability is
// ambient, with its supplementary group.
func TestUpSecurityContextInProcDescribeAndSecurity(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	grp := testusers.NewGroup(t)
	u := testusers.NewUser(t)
	cfg := strings.NewReplacer("USER", u.Name, "GROUP", grp.Name).Replace(securityE2EConfig)
	f := startUp(t, cfg)

	// What the kernel applied.
	locked := execedStatus(t, f.waitRunning(t, "locked", "app"))
	for k, want := range map[string]string{"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "CapPrm": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
		if locked[k] != want {
			t.Errorf("locked/app %s: %q, want %q", k, locked[k], want)
		}
	}
	// Its exec probe runs with the process's security context.
	if !eventually(func() bool { return f.processStatus(t, "locked", "app").Ready }) {
		t.Errorf("locked/app never became ready: its exec probe, which checks it has no capability, no_new_privs and a seccomp filter, did not run so narrowed")
	}
	if st := f.processStatus(t, "locked", "app"); st.RestartCount != 0 {
		t.Errorf("locked/app restarted %d times: its post_start hook, which checks it has no capability and a seccomp filter, failed", st.RestartCount)
	}
	if code, out := f.ctl(t, "exec", "locked", "--", "sh", "-c", "echo x > /podsup-ro-root-test"); code == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write to the read-only root: exit %d, %s", code, out)
	}
	// Nothing set: root in a sandbox gets the container engines' default
	// set, root on the host every capability podsup has.
	boxed := execedStatus(t, f.waitRunning(t, "boxed", "app"))
	if want := fmt.Sprintf("%016x", uint64(supervisor.DefaultCapSet())); boxed["CapBnd"] != want || boxed["CapEff"] != want {
		t.Errorf("boxed/app (root in a sandbox, no security field): CapBnd %q CapEff %q, want the default set %s", boxed["CapBnd"], boxed["CapEff"], want)
	}
	own := map[string]string{}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				own[k] = strings.TrimSpace(v)
			}
		}
	}
	if open := execedStatus(t, f.waitRunning(t, "open", "app")); open["CapBnd"] != own["CapBnd"] || open["CapEff"] != own["CapEff"] {
		t.Errorf("open/app (root on the host, no security field): CapBnd %q CapEff %q, want podsup's %q %q", open["CapBnd"], open["CapEff"], own["CapBnd"], own["CapEff"])
	}
	amb := execedStatus(t, f.waitRunning(t, "ambient", "app"))
	const netBind = "0000000000000400"
	if amb["CapAmb"] != netBind || amb["CapEff"] != netBind || !strings.HasPrefix(amb["Uid"], strconv.Itoa(u.UID)+"\t") ||
		!slices.Contains(strings.Fields(amb["Groups"]), strconv.Itoa(grp.GID)) {
		t.Errorf("ambient/app: Uid %q Groups %q CapEff %q CapAmb %q; want uid %d, group %d, NET_BIND_SERVICE ambient",
			amb["Uid"], amb["Groups"], amb["CapEff"], amb["CapAmb"], u.UID, grp.GID)
	}

	// What describe shows of it.
	code, out := f.ctl(t, "describe", "locked/app")
	for _, want := range []string{"Cap Effective:  none", "Cap Bounding:   none", "No New Privs:   True", "Seccomp:        filter (runtime/default)", "Read-only Root: True", "User Namespace: no"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("describe locked/app lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	code, out = f.ctl(t, "describe", "ambient/app")
	if want := fmt.Sprintf("uid=%d", u.UID); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "Cap Ambient:    NET_BIND_SERVICE") {
		t.Errorf("describe ambient/app (exit %d):\n%s", code, out)
	}

	// How podsup security rates them.
	code, out = f.ctl(t, "security", "-o", "json")
	var rated struct {
		Processes []processExposure `json:"processes"`
	}
	if err := json.Unmarshal([]byte(out), &rated); code != 0 || err != nil {
		t.Fatalf("security -o json: exit %d, %v\n%s", code, err, out)
	}
	exposure := map[string]float64{}
	for _, r := range rated.Processes {
		if r.Exposure != nil {
			exposure[r.Group] = *r.Exposure
		}
	}
	if exposure["open"] != 10 || exposure["locked"] > 5 || exposure["open"]-exposure["locked"] < 5 {
		t.Errorf("exposures %v: want open 10.0, locked at most 5.0", exposure)
	}
	code, out = f.ctl(t, "security", "locked/app")
	for _, want := range []string{"✓ capabilities", "✓ seccomp", "✓ read_only_root_filesystem", "✗ user_namespace", "Overall exposure level for locked/app"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("security locked/app lacks %q (exit %d):\n%s", want, code, out)
		}
	}
}
