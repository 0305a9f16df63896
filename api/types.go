package api

import (
	"encoding/json"
	"time"
)

// The v1 wire objects. They mirror the supervisor's snapshots with stable
// snake_case names, so the protocol does not change when the supervisor's
// Go types do (package apiserver converts them). `podsup ... -o json`
// prints exactly these.

// StatusResponse is GET /v1/status.
type StatusResponse struct {
	Groups []GroupStatus `json:"groups"`
}

// GroupStatus is one group.
type GroupStatus struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Ready bool   `json:"ready"`
	// ReadinessHeldBy names the recreate request holding readiness false.
	ReadinessHeldBy string          `json:"readiness_held_by,omitempty"`
	Init            []ProcessStatus `json:"init,omitempty"`
	Processes       []ProcessStatus `json:"processes"`
}

// WatchEvent is one line of a status watch (GET /v1/status[...]?watch=true,
// `podsup status -w -o json`), shaped like a Kubernetes watch event
// (apimachinery's metav1.WatchEvent, `kubectl get -w --output-watch-events`):
//
//	{"type":"ADDED","group":{...}}     a group podsup has (first the whole
//	                                   state, one line per group), or one
//	                                   that appeared since (a reload)
//	{"type":"BOOKMARK"}                once, after the first ADDED lines:
//	                                   they were the whole state (Kubernetes'
//	                                   initial-events-end bookmark)
//	{"type":"MODIFIED","group":{...}}  a group that changed
//	{"type":"DELETED","group":{...}}   a group that is gone (a reload removed
//	                                   it), with its last state
//
// Group is always the whole group (every process of it, or with a watch of
// GROUP/PROCESS that process), never a difference: "processes": [] means the
// group has none, and a process missing from a MODIFIED group is gone. A
// watch of GROUP/PROCESS says DELETED when the process leaves the group. A
// reader keeps a map from the group's name: ADDED and MODIFIED set it,
// DELETED removes it; unknown types are to be skipped (types are only ever
// added). Notices coalesce, so a burst of changes may arrive as one
// MODIFIED holding each process's last state.
type WatchEvent struct {
	Type  string       `json:"type"`
	Group *GroupStatus `json:"group,omitempty"`
}

// The types of a WatchEvent.
const (
	WatchAdded    = "ADDED"
	WatchModified = "MODIFIED"
	WatchDeleted  = "DELETED"
	WatchBookmark = "BOOKMARK"
)

// ProcessStatus is one process, shaped like a container status.
type ProcessStatus struct {
	Name            string       `json:"name"`
	Init            bool         `json:"init,omitempty"`
	State           string       `json:"state"`
	Reason          string       `json:"reason,omitempty"`
	Message         string       `json:"message,omitempty"`
	Ready           bool         `json:"ready"`
	Started         bool         `json:"started"`
	RestartCount    int          `json:"restart_count"`
	InstanceID      string       `json:"instance_id,omitempty"`
	Pid             int          `json:"pid,omitempty"`
	StartedAt       *time.Time   `json:"started_at,omitempty"`
	FinishedAt      *time.Time   `json:"finished_at,omitempty"`
	Terminated      *Termination `json:"terminated,omitempty"`
	LastTermination *Termination `json:"last_termination,omitempty"`
	NextStartAt     *time.Time   `json:"next_start_at,omitempty"`
	// CreatedAt is when podsup took the process on (`up`, or the reload
	// that added it), whatever its instances did since: AGE in `podsup
	// status`, as a pod's creationTimestamp is kubectl's. A reload that
	// changes the process keeps it; one that replaces its group does not.
	CreatedAt *time.Time `json:"created_at,omitempty"`
	// StatusText is the process's own status line (sd_notify STATUS=).
	StatusText string `json:"status_text,omitempty"`
	// Backoff is the current back-off wait while in CrashLoopBackOff: the
	// delay from the last instance's end to NextStartAt, a Go duration.
	Backoff string `json:"backoff,omitempty"`
	// Cgroup is the running instance's cgroup (its v2 path, or the v1
	// memory one where only v1 is mounted), filled only when asked for
	// (GET /v1/status?wide=true, `podsup status -o wide`): finding it costs
	// a read of /proc for every process.
	Cgroup string `json:"cgroup,omitempty"`
	// Sidecar marks an init with restart_policy "always": it keeps
	// running beside the processes (a restartable init container).
	Sidecar bool `json:"sidecar,omitempty"`
	// Usage is what the running instance's cgroup uses now, filled only
	// when asked for (GET /v1/status?usage=true, `podsup top`) and only for
	// a process in a cgroup of its own.
	Usage *Usage `json:"usage,omitempty"`
	// Terminating is set while a stop of the instance is under way or
	// decided (kubectl's Terminating; docs/semantics.md S6): state stays
	// "running" (or "waiting" while its start is in flight) until the
	// process is gone, and ready is false throughout.
	Terminating *Terminating `json:"terminating,omitempty"`
}

// DescribeResponse is GET /v1/describe/{group}[/{process}]: one group as
// `kubectl describe pod` shows a pod, from the status, the configuration in
// force, the cgroup files and the kept events. With a process, Group holds
// that process alone and the group's own events are left out.
type DescribeResponse struct {
	Group GroupDescription `json:"group"`
}

// GroupDescription is a group's status with its configuration, usage and
// events.
type GroupDescription struct {
	Name            string `json:"name"`
	Phase           string `json:"phase"`
	Ready           bool   `json:"ready"`
	ReadinessHeldBy string `json:"readiness_held_by,omitempty"`
	// Conditions are a pod's Initialized and Ready, in that order.
	Conditions    []Condition `json:"conditions"`
	RestartPolicy string      `json:"restart_policy,omitempty"`
	// DependsOn is the group's depends_on blocks, as a process's.
	DependsOn []string `json:"depends_on,omitempty"`
	// Grace is the termination grace period, a Go duration.
	Grace string `json:"grace,omitempty"`
	// Backoff is the CrashLoopBackOff parameters in force for the group.
	Backoff *BackoffParams `json:"backoff,omitempty"`
	// Sandbox is nil for a group without a sandbox block.
	Sandbox *SandboxDescription `json:"sandbox,omitempty"`
	// Cgroup and Usage are the group's cgroup and what it uses now; empty
	// when no process of the group is running (the cgroup is found from a
	// running process) or podsup has no cgroups.
	Cgroup    string               `json:"cgroup,omitempty"`
	Usage     *Usage               `json:"usage,omitempty"`
	Init      []ProcessDescription `json:"init,omitempty"`
	Processes []ProcessDescription `json:"processes"`
	// Events are the group's own events (those naming no process), oldest
	// first, at most the last 20.
	Events []Event `json:"events"`
}

// Condition is one of a pod's conditions.
type Condition struct {
	Type   string `json:"type"`
	Status bool   `json:"status"`
}

// BackoffParams are the CrashLoopBackOff delays, Go durations.
type BackoffParams struct {
	Initial string `json:"initial"`
	Max     string `json:"max"`
	Reset   string `json:"reset"`
}

// SandboxDescription is a group's sandbox block.
type SandboxDescription struct {
	Namespaces []string `json:"namespaces,omitempty"`
	Hostname   string   `json:"hostname,omitempty"`
	Rootfs     string   `json:"rootfs,omitempty"`
	// Mounts are "type source -> target (ro)" lines.
	Mounts []string `json:"mounts,omitempty"`
	Limits *Limits  `json:"limits,omitempty"`
	// NetworkMode is the network block's mode; empty without one.
	NetworkMode string `json:"network_mode,omitempty"`
	// Ports are the network's ports, "NAME CONTAINER/PROTO" with
	// " <- HOSTIP:HOSTPORT" when published.
	Ports []string `json:"ports,omitempty"`
	// Network is the sandbox's CNI attachment while it has one.
	Network *NetworkDescription `json:"network,omitempty"`
}

// NetworkDescription is a sandbox's attachment to a CNI network (mode
// bridge or cni), as the plugins' ADD made it and their CHECK found it.
type NetworkDescription struct {
	// Network is the CNI network's name (the bridge's, for mode bridge).
	Network     string   `json:"network"`
	ContainerID string   `json:"container_id"`
	Interface   string   `json:"interface"`
	IPs         []string `json:"ips,omitempty"`
	Gateways    []string `json:"gateways,omitempty"`
	// Check is "ok" or the plugins' CHECK error.
	Check string `json:"check"`
	// Result is the plugins' ADD result, CNI's JSON.
	Result json.RawMessage `json:"result,omitempty"`
}

// Limits are a group's or a process's cgroup limits; zero fields are
// unlimited.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	CPU         float64 `json:"cpu,omitempty"`
	CPUWeight   int     `json:"cpu_weight,omitempty"`
	Pids        int64   `json:"pids,omitempty"`
}

// Usage is a cgroup's use now, read from its files (v2, or v1 where a
// figure lives there). A figure the kernel does not offer is absent.
type Usage struct {
	// CPU is the CPU time used by every process that ran in the cgroup,
	// a Go duration, and the same in seconds.
	CPU        string  `json:"cpu,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// MemoryBytes is memory.current (v1 memory.usage_in_bytes);
	// MemoryLimitBytes the limit in force there or above, 0 for none.
	MemoryBytes      uint64 `json:"memory_bytes,omitempty"`
	MemoryLimitBytes uint64 `json:"memory_limit_bytes,omitempty"`
	// Pids is pids.current; PidsLimit the limit in force, 0 for none.
	Pids      uint64 `json:"pids,omitempty"`
	PidsLimit uint64 `json:"pids_limit,omitempty"`
}

// ProcessDescription is a process's status (its fields inline) with its
// configuration, usage and events.
type ProcessDescription struct {
	ProcessStatus
	Command       []string `json:"command,omitempty"`
	WorkingDir    string   `json:"working_dir,omitempty"`
	User          string   `json:"user,omitempty"`
	RestartPolicy string   `json:"restart_policy,omitempty"`
	Critical      bool     `json:"critical,omitempty"`
	// Limits are the process's own cgroup limits (its resources block),
	// within its group's (GroupDescription.Sandbox.Limits).
	Limits *Limits `json:"limits,omitempty"`
	// DependsOn is the process's depends_on blocks, each as
	// "NAME CONDITION" with "(timeout D, restart)" when set.
	DependsOn []string `json:"depends_on,omitempty"`
	// Probes are in the order startup, liveness, readiness.
	Probes []ProbeDescription `json:"probes,omitempty"`
	// Hooks are in the order pre_start, post_start, pre_stop, post_stop.
	Hooks []HookDescription `json:"hooks,omitempty"`
	// Security is the process's security context: what the kernel reports
	// of its running process and what its configuration sets.
	Security *SecurityDescription `json:"security,omitempty"`
	Usage    *Usage               `json:"usage,omitempty"`
	// Events are the process's events, oldest first, at most the last 20.
	Events []Event `json:"events"`
}

// SecurityDescription is a process's effective security context. Live
// is read from /proc/PID/status of its running process, so it is what
// the kernel applies, not what was asked; the other fields are from the
// configuration (its group's context under its own, its group's
// sandbox), where /proc cannot tell.
type SecurityDescription struct {
	// Live is absent while the process is not running, or when its
	// status could not be read.
	Live *LiveSecurity `json:"live,omitempty"`
	// RunAsNonRoot, Privileged, NoNewPrivileges, Seccomp (a profile:
	// "runtime/default", "unconfined", a path; empty when unset) and
	// SupplementalGroups are the configuration's.
	RunAsNonRoot       bool     `json:"run_as_non_root,omitempty"`
	Privileged         bool     `json:"privileged,omitempty"`
	NoNewPrivileges    bool     `json:"no_new_privileges,omitempty"`
	Seccomp            string   `json:"seccomp,omitempty"`
	SupplementalGroups []string `json:"supplemental_groups,omitempty"`
	// ReadOnlyRootFilesystem, PrivateTmp and ProcMount are the sandbox's
	// (ProcMount "Default" or "Unmasked", empty without a sandbox);
	// MaskedProc says whether runc's masked and read-only /proc paths are
	// hidden: a sandbox with a proc mount and ProcMount Default.
	ReadOnlyRootFilesystem bool   `json:"read_only_root_filesystem"`
	PrivateTmp             bool   `json:"private_tmp"`
	ProcMount              string `json:"proc_mount,omitempty"`
	MaskedProc             bool   `json:"masked_proc"`
	// UserNamespace is whether root in the process is mapped to an
	// unprivileged user on the host, read from /proc/PID/uid_map: the
	// processes of a rootless podsup (podsup up as a normal user).
	UserNamespace bool `json:"user_namespace"`
}

// LiveSecurity is what /proc/PID/status says of a running process:
// effective uid and gid, supplementary groups, capability sets by name
// (without CAP_; a number the kernel has and podsup does not know is
// "CAP_N"), no_new_privs and the seccomp mode ("disabled", "strict" or
// "filter").
type LiveSecurity struct {
	Pid          int      `json:"pid"`
	UID          int      `json:"uid"`
	GID          int      `json:"gid"`
	Groups       []int    `json:"groups"`
	CapEffective []string `json:"cap_effective"`
	CapBounding  []string `json:"cap_bounding"`
	CapAmbient   []string `json:"cap_ambient"`
	NoNewPrivs   bool     `json:"no_new_privs"`
	Seccomp      string   `json:"seccomp"`
}

// ProbeDescription is one probe with kubelet's parameters (defaults
// applied) and what the supervisor knows of its last result.
type ProbeDescription struct {
	Kind string `json:"kind"` // startup, liveness or readiness
	// Action is kubectl's: "exec [cmd args]", "http-get http://host:port/path"
	// or "tcp-socket host:port".
	Action           string `json:"action"`
	InitialDelay     string `json:"initial_delay"`
	Timeout          string `json:"timeout"`
	Period           string `json:"period"`
	SuccessThreshold int    `json:"success_threshold"`
	FailureThreshold int    `json:"failure_threshold"`
	// LastResult is "success", "failure" or "unknown" (not run yet, or
	// the process is not running); LastFailure the message of the last
	// failure of the current instance and LastFailureAt its time.
	LastResult    string     `json:"last_result"`
	LastFailure   string     `json:"last_failure,omitempty"`
	LastFailureAt *time.Time `json:"last_failure_at,omitempty"`
}

// HookDescription is one lifecycle hook.
type HookDescription struct {
	Point  string `json:"point"` // pre_start, post_start, pre_stop, post_stop
	Action string `json:"action"`
	// Timeout is a Go duration; empty for the point's default.
	Timeout string `json:"timeout,omitempty"`
}

// Terminating is a stop under way: since when, why (Stop, Restart,
// Shutdown, Reload, Recreate, a probe, ...) and who asked.
type Terminating struct {
	Since       *time.Time `json:"since,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	RequestedBy string     `json:"requested_by,omitempty"`
}

// Termination is how an instance ended.
type Termination struct {
	InstanceID string     `json:"instance_id,omitempty"`
	ExitCode   int        `json:"exit_code"`
	Signal     string     `json:"signal,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Message    string     `json:"message,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// Event is one kubelet-style event. Identical events that repeat are one
// event with a count, like kubelet's: each repeat is sent again with the
// next seq, the count so far, the first time of the series and its own
// time (time and last_time are the same).
type Event struct {
	Seq          uint64    `json:"seq"`
	Time         time.Time `json:"time"`
	Count        int       `json:"count"`
	FirstTime    time.Time `json:"first_time"`
	LastTime     time.Time `json:"last_time"`
	Type         string    `json:"type"`
	Reason       string    `json:"reason"`
	Group        string    `json:"group"`
	Process      string    `json:"process,omitempty"`
	InstanceID   string    `json:"instance_id,omitempty"`
	RestartCount int       `json:"restart_count"`
	Pid          int       `json:"pid,omitempty"`
	Message      string    `json:"message,omitempty"`
}

// ActionRequest is the body of start/stop/restart/shutdown.
type ActionRequest struct {
	// Grace overrides the grace period (K2), a Go duration like "10s".
	Grace string `json:"grace,omitempty"`
}

// ActionResponse acknowledges a queued request.
type ActionResponse struct {
	Message string `json:"message"`
}

// ReloadResponse says what a reload changed.
type ReloadResponse struct {
	Message string `json:"message"`
}

// ExecRequest is the body of POST /v1/exec/{group}/{process}.
type ExecRequest struct {
	Command []string `json:"command"`
}

// ExecFrame is one line of an exec's streamed response: output, then a
// final frame with the exit code.
type ExecFrame struct {
	Stream   string `json:"stream,omitempty"` // "stdout" or "stderr"
	Data     []byte `json:"data,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
}

// LogLine is one line of process output.
type LogLine struct {
	Time     time.Time `json:"time"`
	Group    string    `json:"group"`
	Process  string    `json:"process"`
	Instance string    `json:"instance,omitempty"`
	Stream   string    `json:"stream"`
	Line     string    `json:"line"`
	// Skipped, when > 0, says a slow reader missed that many lines here.
	Skipped int `json:"skipped,omitempty"`
}

// VersionResponse is GET /v1/version.
type VersionResponse struct {
	Version string `json:"version"`
	Pid     int    `json:"pid"`
}

// SelfResponse is GET /v1/self: podsup's own resource use.
type SelfResponse struct {
	Pid        int `json:"pid"`
	Goroutines int `json:"goroutines"`
	// Threads is the number of OS threads (from /proc/self/status).
	Threads int `json:"threads"`
	// OpenFDs counts the entries of /proc/self/fd.
	OpenFDs int `json:"open_fds"`
	// RSSBytes is the resident set size (VmRSS).
	RSSBytes int64 `json:"rss_bytes"`
}

// RecreateRequest is the body of POST /v1/recreates: OpenKruise's
// ContainerRecreateRequest for one group. Durations are Go durations.
type RecreateRequest struct {
	Group         string   `json:"group"`
	Processes     []string `json:"processes"`
	Ordered       bool     `json:"ordered,omitempty"`
	FailurePolicy string   `json:"failure_policy,omitempty"` // fail (default) | ignore
	Grace         string   `json:"grace,omitempty"`
	UnreadyGrace  string   `json:"unready_grace,omitempty"`
	MinStarted    string   `json:"min_started,omitempty"`
	Deadline      string   `json:"deadline,omitempty"`
	TTL           string   `json:"ttl,omitempty"`
}

// Recreate is a request's status.
type Recreate struct {
	ID             string            `json:"id"`
	Group          string            `json:"group"`
	Phase          string            `json:"phase"`
	Failed         bool              `json:"failed"`
	Message        string            `json:"message,omitempty"`
	Ordered        bool              `json:"ordered,omitempty"`
	FailurePolicy  string            `json:"failure_policy"`
	HoldsReadiness bool              `json:"holds_readiness,omitempty"`
	Processes      []RecreateProcess `json:"processes"`
	CreationTime   *time.Time        `json:"creation_time,omitempty"`
	StartTime      *time.Time        `json:"start_time,omitempty"`
	CompletionTime *time.Time        `json:"completion_time,omitempty"`
	Requester      string            `json:"requester,omitempty"`
	Spec           RecreateRequest   `json:"spec"`
}

// RecreateProcess is one process of a recreate request.
type RecreateProcess struct {
	Name               string `json:"name"`
	Phase              string `json:"phase"`
	Message            string `json:"message,omitempty"`
	PreviousInstanceID string `json:"previous_instance_id,omitempty"`
	InstanceID         string `json:"instance_id,omitempty"`
}

// RecreateList is GET /v1/recreates.
type RecreateList struct {
	Recreates []Recreate `json:"recreates"`
}
