package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// What this host lets podsup do, for the faults known before a first
// start: a configuration that asks for namespaces, resource limits or
// activation sockets that podsup's own process cannot have would fail at
// every start, in a back-off loop that never ends (StartError 128, and
// messages such as "/proc/self/exe: permission denied" that name no
// fix). SandboxRuntime reports the first two as supervisor.Capabilities, so
// that podsup up and every reload refuse such a configuration in one line
// per fault naming the fix; CheckHost is the same verdict for podsup
// validate, which runs no runtime, plus the commands no start could find
// and the id ranges a sandbox's user namespace takes.

// runAsRoot is the fix for what only root may do.
const runAsRoot = "run podsup as root (sudo podsup up, or a system service)"

// whoAmI names podsup's effective user in messages.
func whoAmI() string {
	uid := os.Geteuid()
	return fmt.Sprintf("podsup runs as uid %d", uid)
}

// namespacesUnavailable says why podsup cannot make namespaces, with the
// fix, or "" when it can: each of a sandbox's namespaces (pid, mount,
// uts, ipc, net) needs CAP_SYS_ADMIN, which a process that is not root of
// its user namespace lacks. Without it the holder's clone fails with
// EPERM, which surfaced as "starting sandbox holder: /proc/self/exe:
// permission denied". podsup up as a normal user has run itself in a
// user namespace of its own (package rootless) before it gets here, where
// the host allows one.
func namespacesUnavailable() string {
	if hasCapability(unix.CAP_SYS_ADMIN) {
		return ""
	}
	if os.Geteuid() == 0 {
		return "they need root (CAP_SYS_ADMIN), and " + whoAmI() + " without it: " + runAsRoot
	}
	why := rootless.Possible()
	if why == "" {
		why = "no user namespace could be made (podsup up said why)"
	}
	return "they need root (CAP_SYS_ADMIN) or a user namespace, and " + whoAmI() + " without it, and " + why +
		": " + runAsRoot + ", or allow user namespaces"
}

// predictNamespaces is namespacesUnavailable for validate, which runs
// no podsup up: a normal user's podsup up would make them in a user
// namespace of its own where the host allows one.
func predictNamespaces() string {
	if os.Geteuid() != 0 && rootless.Possible() == "" {
		return ""
	}
	return namespacesUnavailable()
}

func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// noCgroupsFix is the fix when podsup may not make cgroups.
const noCgroupsFix = "run podsup as root, or as a systemd service with Delegate=yes (a cgroup of its own it may write)"

// rootlessCgroupsFix is the fix for a rootless podsup (package rootless).
const rootlessCgroupsFix = "run podsup as a systemd --user service with Delegate=yes (a cgroup of its own it may write), or give podsup up --cgroup a cgroup v2 directory delegated to its user"

// limitsUnavailable is SandboxRuntime's verdict on resource limits: the
// runtime made no cgroup root (NewRuntime said why in the log). A
// rootless podsup runs without them, as podman rootless does, having said
// so once at start-up (rootlessWarning): the whole point of it is to run
// where there is no root, and a delegated cgroup is often missing there.
func (l *SandboxRuntime) limitsUnavailable() string {
	if l.rt == nil || l.rt.CgroupsEnabled() { // nil: a test's, with no sandbox runtime to ask
		return ""
	}
	if _, ok := rootless.Inner(); ok {
		return ""
	}
	return "they need root or a delegated cgroup, and " + whoAmI() + " with no cgroup it may write: " + noCgroupsFix
}

// predictLimits is limitsUnavailable without making anything, for
// validate: each controller r needs must be in a hierarchy whose cgroup
// of podsup's podsup may write into (for cgroup v2, with the controller
// offered to it).
func predictLimits(r spec.Resources) string {
	layout, err := cgroups.Detect()
	if err != nil {
		return fmt.Sprintf("they need cgroups, which cannot be read here (%v): %s", err, noCgroupsFix)
	}
	var need []string
	if r.Memory > 0 {
		need = append(need, "memory")
	}
	if r.CPU > 0 || r.CPUWeight > 0 {
		need = append(need, "cpu")
	}
	if r.Pids > 0 {
		need = append(need, "pids")
	}
	var why []string
	for _, c := range need {
		var h *cgroups.Hierarchy
		switch {
		case layout.V2 != nil && layout.V2.Has(c):
			h = layout.V2
		case layout.V1For(c) != nil:
			h = layout.V1For(c)
		default:
			why = append(why, fmt.Sprintf("no cgroup hierarchy offers the %s controller", c))
			continue
		}
		dir, err := h.OwnDir()
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
			why = append(why, fmt.Sprintf("they need root or a delegated cgroup, and %s, which may not create cgroups in %s (%v)", whoAmI(), dir, err))
		}
	}
	if len(why) == 0 {
		return ""
	}
	if os.Geteuid() != 0 && predictNamespaces() == "" {
		return why[0] + " (podsup up would run rootless, in a user namespace, and start without them): " + rootlessCgroupsFix
	}
	return why[0] + ": " + noCgroupsFix // the first says it; the fix is the same for all
}

// CheckHost returns what of cfg this host would not run if podsup ran
// here, as this user, with this environment: one spec.FieldError per
// fault, its message naming the fix. podsup validate shows them as
// warnings: they depend on where and as whom podsup will run, which
// validate cannot know. podsup up refuses the first three (namespaces,
// resource limits, sockets: supervisor.Capabilities); a command not
// found is for each start to report, as it may yet appear.
//
// Sockets are checked against LISTEN_FDNAMES in env: a podsup that is
// not socket-activated has none.
func CheckHost(cfg *spec.Config, env []string) spec.Errors {
	var errs spec.Errors
	add := func(path []string, format string, args ...any) {
		errs = append(errs, &spec.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	caps := supervisor.Capabilities{Sandboxes: true, SocketActivation: true, ReadinessProtocols: true,
		OutputCapture: true, Journal: true, ActivationChecked: true, ActivationSockets: listenFDNames(env)}
	for _, g := range cfg.Groups {
		if g.Sandbox != nil {
			if len(g.Sandbox.Namespaces) > 0 {
				caps.NoNamespaces = predictNamespaces()
			}
			if g.Sandbox.Resources != (spec.Resources{}) && caps.NoResourceLimits == "" {
				caps.NoResourceLimits = predictLimits(g.Sandbox.Resources)
			}
			for _, pr := range append(append([]spec.Process(nil), g.Init...), g.Processes...) {
				if pr.Resources != (spec.Resources{}) && caps.NoResourceLimits == "" {
					caps.NoResourceLimits = predictLimits(pr.Resources)
				}
			}
		}
	}
	if err := caps.Check(cfg); err != nil {
		if es, ok := spec.AsErrors(err); ok {
			errs = append(errs, es...)
		}
	}
	for _, g := range cfg.Groups {
		if g.Sandbox != nil && g.Sandbox.UserNamespace {
			if err := sandbox.SubIDsAvailable(g.Sandbox.SubIDUser); err != nil {
				add([]string{"group", g.Name, "sandbox", "user_namespace"}, "%v", err)
			}
		}
	}
	errs = append(errs, journalHostWarnings(cfg)...) // journalcheck.go
	for _, g := range cfg.Groups {
		for i := range g.Init {
			checkCommand(&g, "init", &g.Init[i], add)
		}
		for i := range g.Processes {
			checkCommand(&g, "process", &g.Processes[i], add)
		}
	}
	return errs
}

// listenFDNames is LISTEN_FDNAMES of env ("" when unset).
func listenFDNames(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LISTEN_FDNAMES="); ok {
			return v
		}
	}
	return ""
}

// checkCommand looks pr's command up as its user would find it, in its
// environment and working directory. A group whose sandbox has a root
// filesystem, or mounts over the path, sees other files: its commands are
// left to the start.
func checkCommand(g *spec.Group, kind string, pr *spec.Process, add func([]string, string, ...any)) {
	if len(pr.Command) == 0 || pr.Command[0] == "" {
		return // spec's validation says so
	}
	if g.Sandbox != nil && g.Sandbox.Rootfs != "" {
		return
	}
	p := []string{"group", g.Name, kind, pr.Name, "command"}
	cred, err := proc.CredentialOf(pr.User, pr.Group)
	if err != nil {
		add(p, "%v: the process could not start", err)
		return
	}
	env := supervisor.Environ(pr.Env)
	if env == nil {
		env = os.Environ()
	}
	path, err := proc.LookPathAs(pr.Command[0], env, pr.WorkingDir, cred)
	if err == nil && !strings.Contains(pr.Command[0], "/") {
		return
	}
	if g.Sandbox != nil {
		at := path
		if err != nil {
			at = pr.Command[0]
		}
		for _, m := range g.Sandbox.Mounts {
			if !strings.Contains(at, "/") || strings.HasPrefix(filepath.Clean(at)+"/", filepath.Clean(m.Target)+"/") {
				return // another file there once the sandbox's mounts are made
			}
		}
	}
	if err == nil {
		// A path with a slash is left to execve by LookPathAs unless it
		// is there and not executable: say when it is not there.
		var st unix.Stat_t
		if serr := unix.Stat(inDir(pr.WorkingDir, path), &st); serr == nil {
			return
		} else if serr != unix.ENOENT && serr != unix.ENOTDIR {
			return
		}
		add(p, "%s: %v: every start would fail (StartError); install it, or fix the path", path, proc.ErrCommandNotFound)
		return
	}
	add(p, "%v: every start would fail (StartError)%s", &proc.StartError{Path: pr.Command[0], Err: err}, commandFix(err))
}

func commandFix(err error) string {
	if strings.Contains(err.Error(), "not executable by") {
		return "; make it executable by that user, or install it where that user can reach it"
	}
	return "; install it, or give its full path, or set PATH in the process's env"
}

func inDir(dir, path string) string {
	if dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// limitsDropped reports whether resource limits are left out of what
// the runtime is asked: a rootless podsup without cgroups runs without
// them (limitsUnavailable).
func (l *SandboxRuntime) limitsDropped() bool {
	_, ok := rootless.Inner()
	return ok && l.rt != nil && !l.rt.CgroupsEnabled()
}

// rootlessWarning is the line podsup up logs at start-up when it runs
// rootless without a cgroup it may write (rt: its runtime), or "".
func rootlessWarning(rt *sandbox.Runtime) string {
	uid, ok := rootless.Inner()
	if !ok || rt.CgroupsEnabled() {
		return ""
	}
	return fmt.Sprintf("rootless (in a user namespace whose root is uid %d) with no delegated cgroup: resource limits are not enforced and a process tree is killed by its process group (a setsid daemon can escape); to have them, %s", uid, rootlessCgroupsFix)
}
