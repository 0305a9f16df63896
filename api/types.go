package api

import "time"

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
	// StatusText is the process's own status line (sd_notify STATUS=).
	StatusText string `json:"status_text,omitempty"`
	// Backoff is the current back-off wait while in CrashLoopBackOff.
	Backoff string `json:"backoff,omitempty"`
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
