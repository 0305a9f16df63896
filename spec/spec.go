// Package spec owns what a podsup group, process, probe, hook and sandbox *is*:
// plain Go types that a library user fills in code and the HCL loader fills
// from a file, with kubelet's defaults and validation beside them
// (docs/semantics.md D1–D7, X2, X5, X12).
//
// It depends on nothing else in podsup so that config, supervisor, probes,
// hooks and sandbox can all import it without a cycle.
//
// Optional durations whose zero value is meaningful (a grace period of 0, a
// back-off of 0) are pointers: nil means "not set, use the default". Probe
// fields keep kubelet's rule that 0 means the default (D1).
package spec

import (
	"math"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Config is a whole podsup configuration: supervisor settings, the default
// back-off and the groups.
type Config struct {
	Supervisor Supervisor
	// Backoff is the default for every group that sets none (X2).
	Backoff Backoff
	Groups  []Group
}

// Supervisor holds podsup's own settings (the `supervisor {}` block).
type Supervisor struct {
	// Socket is the control socket's path (default DefaultSocketPath()).
	Socket string
	// SocketGroup, when set, opens the control socket to that group's
	// members, with the read role and SocketGroupRoles.
	SocketGroup string
	// SocketGroupRoles are the roles of the API the socket group's members
	// have besides "read" (SocketGroupRoleNames); nil means read alone.
	SocketGroupRoles []string
	// LogLevel is a zerolog level name: trace, debug, info, warn, error.
	LogLevel string
	// LogFormat is "console" (default) or "json".
	LogFormat string
	// LogDir, when set, holds per-process log files.
	LogDir string
	// MinimumGrace is K5's floor between the stop signal and SIGKILL (X12).
	// nil means DefaultMinimumGrace.
	MinimumGrace *time.Duration
	// NotifyReady is when podsup tells systemd READY=1: "ready" (default,
	// every group started and ready) or "started".
	NotifyReady string
	// MetricsListen, when set, serves GET /metrics (Prometheus's text
	// format) on this TCP address too, besides the control socket. Only a
	// loopback address unless MetricsAllowRemote: the metrics name every
	// group and process.
	MetricsListen      string
	MetricsAllowRemote bool
	// StopOrder is how a shutdown stops processes: StopOrdered (the
	// default: dependents first, in reverse depends_on order) or
	// StopParallel (everything at once).
	StopOrder StopOrder
}

// IsZero reports whether s sets nothing: the configuration has no
// supervisor block (or an empty one).
func (s Supervisor) IsZero() bool {
	if len(s.SocketGroupRoles) > 0 {
		return false
	}
	s.SocketGroupRoles = nil
	return reflect.ValueOf(s).IsZero()
}

// SocketGroupRoleNames are the roles supervisor.socket_group_roles may
// name: "read" (status, describe, events, metrics, health, wait),
// "operate" (start, stop, restart, recreate, reload, shutdown), "logs"
// (process output) and "exec" (commands in a group's sandbox, never as
// root for a peer that is not root). Package apiserver enforces them.
var SocketGroupRoleNames = []string{"read", "operate", "logs", "exec"}

// Default values (D2, X2, X12).
const (
	DefaultSocket                 = "/run/podsup/podsup.sock"
	DefaultTerminationGracePeriod = 30 * time.Second
	DefaultMinimumGrace           = 2 * time.Second
	DefaultBackoffInitial         = 10 * time.Second
	DefaultBackoffMax             = 5 * time.Minute
	DefaultBackoffReset           = 10 * time.Minute
)

// RestartPolicy says when an exited process is started again (R1).
type RestartPolicy string

const (
	RestartAlways    RestartPolicy = "always"
	RestartOnFailure RestartPolicy = "on-failure"
	RestartNever     RestartPolicy = "never"
)

// Backoff parameterises the CrashLoopBackOff throttle (B1, X2). Values are
// taken literally: Initial 0 means restart at once.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
	// Reset forgets the back-off when an instance finished more than Reset
	// after the last back-off update (B4).
	Reset time.Duration
}

// DefaultBackoff is kubelet's: 10s doubling to 5m, forgotten after 10m.
func DefaultBackoff() Backoff {
	return Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, Reset: DefaultBackoffReset}
}

// Group is a pod: processes that share a sandbox and a lifecycle.
type Group struct {
	Name string
	// RestartPolicy defaults to RestartAlways (D2).
	RestartPolicy RestartPolicy
	// TerminationGracePeriod is K1's pod value; nil means 30s (D2).
	TerminationGracePeriod *time.Duration
	// Backoff overrides the config's default for this group.
	Backoff *Backoff
	// Sandbox, when set, gives the group its own namespaces and cgroup.
	Sandbox *Sandbox
	// Init processes run to completion, one at a time, before Processes (I1).
	Init      []Process
	Processes []Process
	// DependsOn holds every process of the group back until each named
	// group meets its condition (the group's Ready, or all its processes
	// started or completed).
	DependsOn []Dependency
	// Security is the default security context of the group's processes
	// and inits (a pod-level securityContext); each process's own fields
	// override it (EffectiveSecurity).
	Security Security
	// BackoffLimit, under restart_policy on-failure or never, is how many
	// failures of the group's processes are started again (under never
	// too, as the Job controller replaces a failed pod) before it gives up
	// (R7, a Job's backoffLimit); nil is no limit.
	BackoffLimit *int
	// Volumes are what the group's processes may mount (volume_mount):
	// Kubernetes' pod volumes. They need a sandbox with the mount
	// namespace.
	Volumes []Volume
	// FSGroup, a group name or number, owns the files of the group's
	// config and secret volumes (readable by the group) and its empty_dir
	// directories (set-group-ID, writable by the group), and is a
	// supplemental group of its inits and processes: Kubernetes' pod
	// securityContext.fsGroup, so that a process that is not root reads
	// its secrets.
	FSGroup string
}

// DefaultJobBackoffLimit is the Job controller's backoffLimit when a Job
// sets none.
const DefaultJobBackoffLimit = 6

// Process is a container: one command, supervised.
type Process struct {
	Name    string
	Command []string
	// Image names the container image the process comes from (Kubernetes'
	// image): data podsup keeps, for podsup-kube export, and never pulls
	// or runs.
	Image string
	Env   map[string]string
	// WorkingDir defaults to podsup's own.
	WorkingDir string
	// User and Group are names or numeric ids; empty means podsup's own.
	User  string
	Group string
	// Security narrows what the process may do, over its group's
	// Security (EffectiveSecurity).
	Security Security
	// StopSignal defaults to SIGTERM (K6).
	StopSignal syscall.Signal
	// RestartPolicy overrides the group's when set.
	RestartPolicy RestartPolicy
	// Critical ends podsup when this process ends for good (X11).
	Critical bool
	// Resources limit the process's own cgroup, within the group's
	// sandbox (Kubernetes' per-container limits under the pod's); they
	// need the group's sandbox block.
	Resources Resources

	StartupProbe   *Probe
	LivenessProbe  *Probe
	ReadinessProbe *Probe

	PreStart  *Hook
	PostStart *Hook
	PreStop   *Hook
	PostStop  *Hook

	Log Log

	// Readiness is an extra readiness protocol: "" (probes only), "notify"
	// (sd_notify READY=1 on a NOTIFY_SOCKET of its own) or "fd:N" (s6: a
	// newline written to fd N).
	Readiness string
	// Watchdog, with Readiness "notify", kills the process when it sends no
	// WATCHDOG=1 for this long.
	Watchdog time.Duration
	// Sockets names socket-activation fds (LISTEN_FDNAMES) handed to the
	// process as fd 3 onwards.
	Sockets []string
	// DependsOn holds each start back until every named process or init
	// of the same group meets its condition.
	DependsOn []Dependency
	// VolumeMounts mount the group's volumes. They are made in the
	// group's sandbox, whose mount namespace the processes share (not in
	// a mount namespace of the process's own, as Kubernetes does): a
	// change of one is a change of the group.
	VolumeMounts []VolumeMount
}

// Log says where a process's stdout and stderr go.
type Log struct {
	// Mode is "capture" (default: podsup reads the output) or "passthrough"
	// (the process writes straight to podsup's own stdout/stderr).
	Mode string
	// MaxSize and MaxFiles rotate per-process files in Supervisor.LogDir.
	MaxSize  int64
	MaxFiles int
	// Journal sends the output to journald when podsup runs under systemd.
	Journal bool
	// SeparateStreams captures stdout and stderr through two pipes, so
	// every line says which one it came from (JSON output, log files,
	// `podsup logs -o json`). By default they share one pipe, as on a
	// terminal: lines keep the order they were written in, are all
	// reported as stdout, and the process costs podsup one fd fewer.
	SeparateStreams bool
	// NoStdout (`stdout = false`) keeps the process's lines off podsup's
	// own output (`podsup up`'s stdout, which under systemd is the journal)
	// while its tail (`podsup logs`) and its file in log_dir still get
	// them: for a process too noisy to read among the others. Journal
	// sends a process's lines to journald by themselves, whatever this
	// says.
	NoStdout bool
}

// ProbeKind names the three probes (P1).
type ProbeKind string

const (
	Startup   ProbeKind = "startup"
	Liveness  ProbeKind = "liveness"
	Readiness ProbeKind = "readiness"
)

// Probe is a kubelet probe. Zero numeric fields take D1's defaults.
type Probe struct {
	Handler
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int
	FailureThreshold int
	// TerminationGracePeriod replaces the group's grace when this probe's
	// failure kills the process (K1.2, D5). Liveness and startup only.
	TerminationGracePeriod *time.Duration
}

// Probe defaults (D1).
const (
	DefaultProbePeriod           = 10 * time.Second
	DefaultProbeTimeout          = 1 * time.Second
	DefaultProbeSuccessThreshold = 1
	DefaultProbeFailureThreshold = 3
)

// Floors of probe timing (D7 allows sub-second values; these keep them
// sane). A probe runs once per period whatever it finds: a period of 1ns
// ran probes back to back, a whole core and thousands of Unhealthy events
// a second. At MinProbePeriod an exec probe costs podsup a few percent of
// a core at most, and ten events a second, which fold into one with a
// count (docs/benchmarks.md, "Probe period floor", has the figures). 100
// ms is T6's scaled period, the kubelet timeline at a tenth of its scale
// that tests run. MinProbeTimeout is well above what a trivial exec probe
// needs from spawn to exit: a timeout below it can only fail. 0 still
// means the default (D1).
const (
	MinProbePeriod  = 100 * time.Millisecond
	MinProbeTimeout = 10 * time.Millisecond
)

// WithDefaults returns p with D1's defaults in place of zero fields.
func (p Probe) WithDefaults() Probe {
	if p.Period == 0 {
		p.Period = DefaultProbePeriod
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultProbeTimeout
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = DefaultProbeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = DefaultProbeFailureThreshold
	}
	return p
}

// Handler is what a probe or hook does; exactly one action is set (D6).
// Sleep is for hooks only; TCPSocket for probes only.
type Handler struct {
	Exec      *ExecAction
	HTTPGet   *HTTPGetAction
	TCPSocket *TCPSocketAction
	Sleep     *SleepAction
	// GRPC is a probe action only.
	GRPC *GRPCAction
}

// GRPCAction calls the gRPC health-checking protocol's
// grpc.health.v1.Health/Check on 127.0.0.1:Port, as Kubernetes' grpc
// probe does: a reply of SERVING is success.
type GRPCAction struct {
	Port int
	// Service is the request's service name; empty asks about the server
	// as a whole.
	Service string
}

// ExecAction runs a command in the process's sandbox; exit 0 is success.
type ExecAction struct {
	Command []string
}

// HTTPGetAction sends a GET; a status in 200–399 is success.
type HTTPGetAction struct {
	// Scheme is "http" (default) or "https".
	Scheme string
	// Host defaults to 127.0.0.1.
	Host    string
	Port    int
	Path    string
	Headers map[string]string
}

// TCPSocketAction succeeds when a connection opens.
type TCPSocketAction struct {
	// Host defaults to 127.0.0.1.
	Host string
	Port int
}

// SleepAction waits, then succeeds.
type SleepAction struct {
	Duration time.Duration
}

// HookPoint names the four lifecycle hooks (X5).
type HookPoint string

const (
	PreStart  HookPoint = "pre_start"
	PostStart HookPoint = "post_start"
	PreStop   HookPoint = "pre_stop"
	PostStop  HookPoint = "post_stop"
)

// Hook is a lifecycle hook.
type Hook struct {
	Handler
	// Timeout bounds the hook; 0 means X5's default for its point
	// (DefaultHookTimeout).
	Timeout time.Duration
}

// DefaultHookTimeout is X5's default: none for post_start (H3) and
// pre_stop (the supervisor waits for it up to the grace, K3, and ends it
// with its instance's SIGKILL, K9), 30s otherwise.
func DefaultHookTimeout(p HookPoint) time.Duration {
	switch p {
	case PreStart, PostStop:
		return 30 * time.Second
	default:
		return 0
	}
}

// Sandbox is a group's isolation: namespaces, mounts and a cgroup.
type Sandbox struct {
	// Namespaces to create: any of pid, mount, uts, ipc, net. None means
	// the host's.
	Namespaces []string
	Hostname   string
	Mounts     []Mount
	// Rootfs, when set, is a directory the sandbox pivot_roots into.
	Rootfs    string
	Resources Resources
	// ReadOnlyRootFilesystem makes the root read-only once the sandbox's
	// mounts are made: the rootfs (runc's readonlyRootfs) or, without one,
	// every mount of the host's tree (systemd's ProtectSystem=strict) but
	// /dev, /proc, /sys and the sandbox's own writable mounts.
	ReadOnlyRootFilesystem bool
	// PrivateTmp mounts a fresh tmpfs (mode 1777) on /tmp and /var/tmp
	// (systemd's PrivateTmp=).
	PrivateTmp bool
	// ProcMount is Kubernetes' procMount: "Default" (or empty) hides
	// runc's masked paths (MaskedPaths) and makes its read-only paths
	// (ReadOnlyPaths) read-only in every sandbox with a proc mount;
	// "Unmasked" leaves /proc and /sys as they are.
	ProcMount string
	// Network, when set, says what the sandbox's network namespace is
	// attached to (Nomad's network block); nil is mode "none" with the
	// "net" namespace and the host's network without it.
	Network *Network
	// HostAliases are extra lines of the sandbox's /etc/hosts
	// (Kubernetes' hostAliases).
	HostAliases []HostAlias
	// DNS, when set, is the sandbox's /etc/resolv.conf (Kubernetes'
	// dnsConfig with dnsPolicy None); nil is the host's.
	DNS *DNSConfig
	// UserNamespace gives the sandbox a user namespace of its own
	// (Kubernetes' hostUsers: false): ids 0..65535 inside are a range of
	// the host's taken from the /etc/subuid and /etc/subgid entries of
	// SubIDUser, 65536 per sandbox, so root inside is an unprivileged
	// uid on the host.
	UserNamespace bool
	// SubIDUser is the user whose /etc/subuid and /etc/subgid ranges the
	// sandboxes' user namespaces are taken from; empty means
	// DefaultSubIDUser.
	SubIDUser string
}

// DefaultSubIDUser is the /etc/subuid and /etc/subgid entry podsup takes
// sandboxes' id ranges from, as kubelet takes them from "kubelet"'s and
// podman's --userns=auto from "containers"'s.
const DefaultSubIDUser = "podsup"

// SubIDsPerSandbox is the size of a sandbox's id range: uid and gid 0 to
// 65535 inside, as Kubernetes and podman map them.
const SubIDsPerSandbox = 65536

// The values of Network.Mode.
const (
	// NetworkNone is the net namespace with its loopback alone.
	NetworkNone = "none"
	// NetworkHost is the host's network: no net namespace.
	NetworkHost = "host"
	// NetworkBridge is a veth into a podsup bridge, an address from
	// host-local IPAM, a default route and masquerade outbound, made by
	// the standard CNI plugins from a configuration podsup writes.
	NetworkBridge = "bridge"
	// NetworkCNI is a network named in a CNI configuration directory.
	NetworkCNI = "cni"
)

// The defaults of a bridge network: a subnet beside podman's 10.88/16.
const (
	DefaultBridge       = "podsup0"
	DefaultBridgeSubnet = "10.89.0.0/16"
	DefaultCNIConfDir   = "/etc/cni/net.d"
)

// DefaultCNIPluginDirs are searched for the plugins' binaries: the CNI
// project's own place and the one Debian's and Ubuntu's
// containernetworking-plugins use.
var DefaultCNIPluginDirs = []string{"/opt/cni/bin", "/usr/lib/cni"}

// Network is a sandbox's network: which CNI network its namespace joins
// and the ports it publishes on the host.
type Network struct {
	// Mode is NetworkNone, NetworkHost, NetworkBridge or NetworkCNI.
	Mode string
	// Name is the CNI network of mode "cni" (its configuration's "name").
	Name string
	// ConfDir is where mode "cni" finds Name; default DefaultCNIConfDir.
	ConfDir string
	// PluginDirs are where the plugins' binaries are looked for; default
	// DefaultCNIPluginDirs.
	PluginDirs []string
	// Bridge and Subnet are mode "bridge"'s Linux bridge and the range
	// host-local IPAM gives addresses from; defaults DefaultBridge and
	// DefaultBridgeSubnet. Groups naming one bridge share it.
	Bridge string
	Subnet string
	// Ports are published on the host through the portmap plugin.
	Ports []Port
}

// Attached says whether the network is made by CNI plugins (bridge, cni).
func (n *Network) Attached() bool {
	return n != nil && (n.Mode == NetworkBridge || n.Mode == NetworkCNI)
}

// Port is a published port (Kubernetes' containerPort with a hostPort).
type Port struct {
	// Name is the port's label; probes may name it instead of a number.
	Name          string
	ContainerPort int
	// HostPort is the port on the host; 0 publishes nothing (the name
	// alone, for probes).
	HostPort int
	// Protocol is "tcp" (default) or "udp".
	Protocol string
	// HostIP is the host address the port is published on; empty: all.
	HostIP string
}

// PortNamed returns the container port of the port called name, or 0.
func (s *Sandbox) PortNamed(name string) int {
	if s == nil || s.Network == nil {
		return 0
	}
	for _, p := range s.Network.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// HostAlias is one line of /etc/hosts: an address and its names.
type HostAlias struct {
	IP        string
	Hostnames []string
}

// DNSConfig is a resolv.conf: Kubernetes' PodDNSConfig.
type DNSConfig struct {
	Nameservers []string
	Searches    []string
	// Options are resolv.conf options, "name" or "name:value" ("ndots:2").
	Options []string
}

// The kinds of Volume.Type.
const (
	VolumeEmptyDir = "empty_dir"
	VolumeHostPath = "host_path"
	VolumeConfig   = "config"
	VolumeSecret   = "secret"
)

// VolumeTypes are the kinds of volume, in the order errors list them.
var VolumeTypes = []string{VolumeEmptyDir, VolumeHostPath, VolumeConfig, VolumeSecret}

// HostPathTypes are Kubernetes' HostPathType checks; "" checks nothing.
var HostPathTypes = []string{"DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}

// Volume is one of a group's volumes (Kubernetes' pod volume).
type Volume struct {
	Name string
	// Type is one of VolumeTypes.
	Type string
	// Medium is empty_dir's: "" (a directory under podsup's state
	// directory) or "memory" (a tmpfs).
	Medium string
	// SizeLimit caps a memory empty_dir (tmpfs size=); 0 is the tmpfs
	// default.
	SizeLimit int64
	// Path is host_path's host path; HostPathType is one of
	// HostPathTypes.
	Path         string
	HostPathType string
	// Files are a config or secret volume's files.
	Files []VolumeFile
	// Mode is the permission bits of a config or secret volume's files
	// (Kubernetes' defaultMode); 0 is 0644 for a config, 0400 for a
	// secret. An FSGroup adds group read.
	Mode uint32
	// RestartOnChange makes a reload that changes a config or secret
	// volume's files restart the running processes that mount it, for
	// programs that read their configuration once; without it the files
	// change under them.
	RestartOnChange bool
}

// VolumeFile is one file of a config or secret volume: its name inside
// the volume (slashes make directories) and its content, given inline or
// read from Source, a host file, each time the volume is written.
type VolumeFile struct {
	Name    string
	Content string
	Source  string
}

// VolumeMount mounts a group volume in the sandbox at Path (Kubernetes'
// volumeMount). SubPath mounts a directory or file inside the volume.
type VolumeMount struct {
	Volume   string
	Path     string
	ReadOnly bool
	SubPath  string
}

// VolumeMounts is every volume mount of the group's inits and processes,
// in the order of the configuration: what its sandbox mounts.
func (g *Group) VolumeMounts() []VolumeMount {
	var out []VolumeMount
	for _, list := range [][]Process{g.Init, g.Processes} {
		for _, p := range list {
			out = append(out, p.VolumeMounts...)
		}
	}
	return out
}

// Volume returns the group's volume of that name, or nil.
func (g *Group) Volume(name string) *Volume {
	for i := range g.Volumes {
		if g.Volumes[i].Name == name {
			return &g.Volumes[i]
		}
	}
	return nil
}

// HasNamespace reports whether s asks for the namespace ns.
func (s *Sandbox) HasNamespace(ns string) bool {
	return s != nil && slices.Contains(s.Namespaces, ns)
}

// The values of Sandbox.ProcMount.
const (
	ProcMountDefault  = "Default"
	ProcMountUnmasked = "Unmasked"
)

// MaskedPaths are hidden in a sandbox with ProcMount Default: /dev/null
// over a file, an empty read-only tmpfs over a directory (runc's default
// maskedPaths, containerd's oci.WithMaskedPaths).
var MaskedPaths = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
	"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}

// ReadOnlyPaths are read-only in a sandbox with ProcMount Default (runc's
// default readonlyPaths).
var ReadOnlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// MaskProc says whether the sandbox hides MaskedPaths and protects
// ReadOnlyPaths: with ProcMount Default, when it mounts a proc.
func (s Sandbox) MaskProc() bool {
	if s.ProcMount == ProcMountUnmasked {
		return false
	}
	for _, m := range s.Mounts {
		if m.Type == "proc" {
			return true
		}
	}
	return false
}

// Mount is one mount made inside the sandbox's mount namespace.
type Mount struct {
	// Type is "proc", "tmpfs" or "bind".
	Type     string
	Source   string
	Target   string
	ReadOnly bool
	// Options are extra mount data, e.g. "size=64m" for tmpfs.
	Options string
	// NoSymlinks makes a bind's source be opened through no symlink, and
	// before any mount of the sandbox is made (one on /tmp cannot hide
	// it): a volume's path, which the group's processes may have written
	// to, or the /etc/hosts podsup writes (package sandbox/volume sets
	// it; the configuration cannot).
	NoSymlinks bool
}

// Resources are cgroup limits; zero means unlimited.
type Resources struct {
	// Memory is a byte limit (memory.max / memory.limit_in_bytes).
	Memory int64
	// CPU is a quota in cores, e.g. 0.5.
	CPU float64
	// CPUWeight is a relative weight, 1–10000 (cgroup v2 semantics).
	CPUWeight int
	// Pids caps the number of tasks.
	Pids int64
	// CPURequest is a CPU request in cores, Kubernetes' requests.cpu (0.2
	// for 200m): CPUWeight is kubelet's weight for it
	// (CPUWeightForRequest), and podsup-kube exports the request as it
	// was, which the weight alone cannot give back.
	CPURequest float64
}

// CPURequestMilli is r's CPU request in millicores.
func (r Resources) CPURequestMilli() int64 { return int64(math.Round(r.CPURequest * 1000)) }

// CPUWeightForRequest is kubelet's cgroup v2 cpu.weight for a CPU request
// of milli millicores: the shares cgroup v1 had (1024 a core, at least 2,
// at most 262144) mapped onto 1–10000.
func CPUWeightForRequest(milli int64) int {
	shares := max(milli*1024/1000, 2)
	shares = min(shares, 262144)
	return int(1 + ((shares-2)*9999)/262142)
}

// Durp returns a pointer to d, for the optional duration fields.
func Durp(d time.Duration) *time.Duration { return &d }

// DefaultHost is where http_get and tcp_socket actions connect when they
// name no host.
const DefaultHost = "127.0.0.1"

// URL is the address a GET goes to: scheme http, host DefaultHost and path
// "/" unless set.
func (a HTTPGetAction) URL() string {
	scheme := strings.ToLower(a.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	host := a.Host
	if host == "" {
		host = DefaultHost
	}
	path := a.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(a.Port)) + path
}
