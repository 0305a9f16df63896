package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Backend answers the API's requests. Supervisor and History are required;
// the function fields may be nil, which answers 503.
type Backend struct {
	Supervisor *supervisor.Supervisor
	History    *supervisor.History
	Version    string
	// Revision is the VCS revision podsup was built from, for
	// podsup_build_info; empty takes the binary's own VCS stamp.
	Revision string
	// Reload re-reads and applies the configuration. On error the running
	// configuration stays; the error text (with file:line:col) goes back to
	// the caller.
	Reload func() (string, error)
	// LastReload, when set, says whether the last load of the
	// configuration (the one at start-up, then each reload) succeeded and
	// when it last did (podsup_config_last_reload_successful).
	LastReload func() (ok bool, lastSuccess time.Time)
	// Logs serves process output.
	Logs LogSource
	// Exec runs argv in the sandbox of group for peer, writing its
	// output, and returns its exit code. Given a process, argv runs in
	// that process's context: its user and group, environment and working
	// directory. Exec decides as whom: never root for a peer that is not
	// root (the server has checked the peer has RoleExec).
	Exec func(ctx context.Context, peer Peer, group, process string, argv []string, stdout, stderr io.Writer) (int, error)
	// Network, when set, returns group's CNI attachment, its plugins'
	// CHECK run (describe shows it); nil for a group without one.
	Network func(ctx context.Context, group string) *api.NetworkDescription
}

// LogSource is where process output is kept.
type LogSource interface {
	// Lines returns the kept lines of one instance of a process that q
	// selects.
	Lines(group, process string, q LogQuery) ([]api.LogLine, error)
	// Follow sends the backlog q selects of the current instance (its last
	// q.Tail lines: none for 0, all kept for -1), then new lines, until ctx
	// ends.
	Follow(ctx context.Context, group, process string, q LogQuery) (<-chan api.LogLine, error)
}

// LogQuery selects a process's lines.
type LogQuery struct {
	// Tail is how many of the last lines, -1 for all kept.
	Tail int
	// Instance names the instance (the current one when empty).
	Instance string
	// Previous asks for the instance before the current one; the server
	// sets Instance instead when the supervisor knows the last terminated
	// instance.
	Previous bool
	// Since, when not zero, keeps the lines captured at or after it.
	Since time.Time
}

// Server serves the API on a unix socket.
type Server struct {
	b      Backend
	policy Policy
	limits *limiter
	log    zerolog.Logger
	srv    *http.Server

	metrics     http.Handler
	stopMetrics context.CancelFunc // ends the event counting
}

// Metrics is GET /metrics's handler (Prometheus's text format), for a
// listener of its own (supervisor.metrics_listen).
func (s *Server) Metrics() http.Handler { return s.metrics }

// New returns a server for b that admits the peers pol allows.
func New(b Backend, pol Policy, log zerolog.Logger) *Server {
	s := &Server{b: b, policy: pol, log: log, limits: newLimiter(processLimits())}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopMetrics = cancel
	s.metrics = metricsHandler(ctx, b)
	s.srv = &http.Server{
		Handler:           s.handler(s.routes()),
		ReadHeaderTimeout: headerReadTime,
		IdleTimeout:       idleTime,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p, err := peerOf(c)
			if err != nil {
				return ctx // no peer: authorize refuses
			}
			return context.WithValue(ctx, peerKey{}, p)
		},
		ErrorLog: newHTTPErrorLog(log),
	}
	return s
}

type pathError struct{ what string }

func (e *pathError) Error() string { return "no such endpoint: " + e.what + " (see `podsup --help`)" }
func (e *pathError) Unwrap() error { return api.ErrNotFound }

// Serve answers requests on l until Shutdown, within the connection
// limits (Limits): a connection over them is answered with an error and
// closed, never kept waiting.
func (s *Server) Serve(l net.Listener) error {
	err := s.srv.Serve(&limitListener{Listener: l, l: s.limits, trusted: s.policy.Trusted})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and ends open streams.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopMetrics()
	return s.srv.Close()
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.VersionResponse{Version: s.b.Version, Pid: os.Getpid()})
}

// self reports podsup's own resource use, what a soak check or an operator
// watches for leaks.
func (s *Server) self(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, readSelf())
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	wide := q.Get("wide") == "true"
	if q.Get("watch") == "true" {
		s.watchStatus(w, r, wide)
		return
	}
	st, err := s.currentStatus(r.PathValue("group"), r.PathValue("process"), wide, q.Get("usage") == "true")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// currentStatus is the status of every group, of one, or of one process;
// wide adds each running process's cgroup, usage its cgroup's usage.
func (s *Server) currentStatus(group, process string, wide, usage bool) (api.StatusResponse, error) {
	st, err := filterStatus(toStatus(s.b.Supervisor.Status()), group, process)
	if err == nil && (wide || usage) {
		addCgroups(st, wide, usage)
	}
	return st, err
}

// filterStatus keeps group (when not empty) and, of it, process (when not
// empty); an unknown one is ErrNotFound.
func filterStatus(st api.StatusResponse, group, process string) (api.StatusResponse, error) {
	if group == "" {
		return st, nil
	}
	for _, g := range st.Groups {
		if g.Name != group {
			continue
		}
		if process != "" {
			var keep []api.ProcessStatus
			for _, p := range append(append([]api.ProcessStatus{}, g.Init...), g.Processes...) {
				if p.Name == process {
					keep = append(keep, p)
				}
			}
			if len(keep) == 0 {
				return api.StatusResponse{}, notFound("group %q has no process %q", group, process)
			}
			g.Init, g.Processes = nil, keep
		}
		return api.StatusResponse{Groups: []api.GroupStatus{g}}, nil
	}
	return api.StatusResponse{}, notFound("no group %q", group)
}

// addCgroups fills in each running process's cgroup (wide: status -o
// wide) and, for one that has a cgroup of its own, that cgroup's usage
// (GET /v1/status?usage=true): one read of /proc per process, and of the
// cgroup's files with usage, so only on request.
func addCgroups(st api.StatusResponse, wide, usage bool) {
	for _, g := range st.Groups {
		for _, list := range [][]api.ProcessStatus{g.Init, g.Processes} {
			for i, p := range list {
				if p.State != string(lifecycle.StateRunning) {
					continue
				}
				dirs, ok := readCgroup(p.Pid)
				switch {
				case !ok:
				case usage && dirs.podsupOwned():
					list[i].Cgroup, list[i].Usage = dirs.name(), dirs.usage()
				case wide:
					list[i].Cgroup = dirs.name()
				}
			}
		}
	}
}

func notFound(format string, args ...any) error {
	return &wrapped{msg: sprintf(format, args...), err: api.ErrNotFound}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// events streams kept events (and, with follow=true, new ones) as JSON lines.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	follow := r.URL.Query().Get("follow") == "true"
	var since uint64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, badRequest("since must be an event sequence number, got %q", v))
			return
		}
		since = n
	}
	st := newStream(w)
	if !follow {
		evs, _ := s.b.History.Since(since)
		for _, e := range evs {
			st.send(toEvent(e))
		}
		return
	}
	s.b.History.Follow(r.Context(), since, func(e lifecycle.Event) bool {
		return st.send(toEvent(e)) == nil
	})
}

func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	group, process, action := r.PathValue("group"), r.PathValue("process"), r.PathValue("action")
	var req api.ActionRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	opts := supervisor.RequestOptions{Requester: "api (" + peerName(r) + ")"}
	grace, err := parseDuration("grace", req.Grace)
	if err != nil {
		writeError(w, err)
		return
	}
	opts.Grace = grace
	switch action {
	case "start":
		err = s.b.Supervisor.Start(group, process, opts)
	case "stop":
		err = s.b.Supervisor.Stop(group, process, opts)
	case "restart":
		err = s.b.Supervisor.Restart(group, process, opts)
	default:
		writeError(w, badRequest("unknown action %q: use start, stop or restart", action))
		return
	}
	if err != nil {
		writeError(w, classify(err))
		return
	}
	target := group
	if process != "" {
		target += "/" + process
	}
	writeJSON(w, http.StatusAccepted, api.ActionResponse{Message: action + " of " + target + " requested"})
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if s.b.Reload == nil {
		writeError(w, &wrapped{"this podsup has no configuration file to reload", api.ErrUnavailable})
		return
	}
	msg, err := s.b.Reload()
	if err != nil {
		writeError(w, &wrapped{"reload failed, the running configuration stays:\n" + err.Error(), api.ErrBadRequest})
		return
	}
	writeJSON(w, http.StatusOK, api.ReloadResponse{Message: msg})
}

func (s *Server) shutdown(w http.ResponseWriter, r *http.Request) {
	var req api.ActionRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	grace, err := parseDuration("grace", req.Grace)
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info().Str("peer", peerName(r)).Msg("shutdown requested through the API")
	writeJSON(w, http.StatusAccepted, api.ActionResponse{Message: "shutdown requested"})
	s.b.Supervisor.RequestShutdown(grace)
}

// logs answers GET /v1/logs/{group}/{process}: the lines kept of the
// process's current instance or, with previous=true, of its last
// terminated one; with follow=true, then every new line. tail=N keeps the
// last N, since=RFC3339 time the lines captured at or after it (tail
// counts among those).
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	if s.b.Logs == nil {
		writeError(w, &wrapped{"process output is not captured by this podsup", api.ErrUnavailable})
		return
	}
	group, process := r.PathValue("group"), r.PathValue("process")
	q := r.URL.Query()
	lq := LogQuery{Tail: -1, Previous: q.Get("previous") == "true"}
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			writeError(w, badRequest("tail must be a number of lines, got %q", v))
			return
		}
		lq.Tail = n
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, badRequest("since must be an RFC 3339 time such as \"2024-05-01T10:00:00Z\", got %q", v))
			return
		}
		lq.Since = t
	}
	if q.Get("follow") == "true" {
		ch, err := s.b.Logs.Follow(r.Context(), group, process, lq)
		if err != nil {
			writeError(w, classify(err))
			return
		}
		st := newStream(w)
		for l := range ch {
			if st.send(l) != nil {
				return
			}
		}
		return
	}
	if lq.Previous {
		if err := s.previousInstance(group, process, &lq); err != nil {
			writeError(w, err)
			return
		}
	}
	lines, err := s.b.Logs.Lines(group, process, lq)
	if err != nil {
		writeError(w, classify(err))
		return
	}
	st := newStream(w)
	for _, l := range lines {
		st.send(l)
	}
}

// previousInstance points q at the process's last terminated instance (S5), as
// the kubelet answers `kubectl logs --previous` with the container of
// lastState.terminated: after any number of restarts, and also while the
// process waits in CrashLoopBackOff, when that instance is still the
// current one (the instance before it would be one crash too old).
func (s *Server) previousInstance(group, process string, q *LogQuery) error {
	if s.b.Supervisor == nil {
		return nil // the HTTP layer's tests: the log source's own notion
	}
	st, err := filterStatus(toStatus(s.b.Supervisor.Status()), group, process)
	if err != nil {
		return err
	}
	// filterStatus left the one process asked for.
	for _, g := range st.Groups {
		ps := append(append([]api.ProcessStatus{}, g.Init...), g.Processes...)
		if len(ps) == 0 {
			continue
		}
		if lt := ps[0].LastTermination; lt != nil && lt.InstanceID != "" {
			q.Instance = lt.InstanceID
			return nil
		}
		return notFound("%s/%s has no previous terminated instance", group, process)
	}
	return nil
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	if s.b.Exec == nil {
		writeError(w, &wrapped{"exec is not available", api.ErrUnavailable})
		return
	}
	var req api.ExecRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		writeError(w, badRequest("exec needs a command: podsup exec GROUP -- CMD [ARGS...]"))
		return
	}
	group, process := r.PathValue("group"), r.PathValue("process")
	if _, ok := s.b.Supervisor.Status().Group(group); !ok {
		writeError(w, notFound("no group %q", group))
		return
	}
	p, _ := PeerFrom(r.Context())
	st := newStream(w)
	code, err := s.b.Exec(r.Context(), p, group, process, req.Command,
		frameWriter{st, "stdout"}, frameWriter{st, "stderr"})
	final := api.ExecFrame{ExitCode: &code}
	if err != nil {
		final.Error = err.Error()
	}
	st.send(final)
}

// stream writes JSON lines, flushing each so followers see it at once.
type stream struct {
	w   http.ResponseWriter
	enc *json.Encoder
	f   http.Flusher
	mu  chan struct{}
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &stream{w: w, enc: json.NewEncoder(w), f: f, mu: make(chan struct{}, 1)}
	if f != nil {
		f.Flush()
	}
	return s
}

func (s *stream) send(v any) error {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

type frameWriter struct {
	s    *stream
	name string
}

func (f frameWriter) Write(p []byte) (int, error) {
	if err := f.s.send(api.ExecFrame{Stream: f.name, Data: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Request bounds: every body the API decodes is a small JSON object (the
// largest is an exec's argv), so 1 MiB is generous; a larger body, or one
// sent too slowly, is refused before it can hold podsup's memory or a
// goroutine for long.
const (
	maxBodySize    = 1 << 20
	maxHeaderBytes = 64 << 10
	// headerReadTime and idleTime free a connection whose client sends
	// nothing; a stream (events, logs, exec) lasts as long as its client.
	headerReadTime = 10 * time.Second
	idleTime       = 2 * time.Minute
)

// decodeBody decodes a request's JSON object into v: an empty body leaves
// v as it is. The body must be one JSON object of at most maxBodySize
// bytes with only v's fields, sent within bodyReadTime; else the error is
// a 400 (or 413) that says what is wrong.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	rc := http.NewResponseController(w)
	// The deadline covers the body only, and is lifted once it is read:
	// streams that follow read nothing but must not time out. It stays
	// after a refusal, so that the server's reading of the rest ends too.
	// Errors mean the connection takes no deadline (not a socket): then
	// the size bound alone applies.
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTime))
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodySize))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errTrailingData
			if extra != nil && !errors.Is(extra, io.ErrUnexpectedEOF) {
				err = extra
			}
		}
	}
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil || err == io.EOF:
		_ = rc.SetReadDeadline(time.Time{})
		return nil
	case errors.As(err, &tooLarge):
		return &wrapped{sprintf("the request body is larger than the %d bytes podsup accepts", tooLarge.Limit), api.ErrTooLarge}
	case errors.As(err, &netErr) && netErr.Timeout():
		return badRequest("the request body did not arrive within %v", bodyReadTime)
	}
	return badRequest("the request body is not valid JSON for this endpoint: %v", err)
}

var errTrailingData = errors.New("more data after the JSON object")

// bodyReadTime is how long a client may take to send a request body; a
// variable so that tests can shorten it.
var bodyReadTime = 30 * time.Second

// classify maps the supervisor's error classes onto the API's.
func classify(err error) error {
	switch {
	case errors.Is(err, supervisor.ErrNotFound):
		return &wrapped{err.Error(), api.ErrNotFound}
	case errors.Is(err, supervisor.ErrShuttingDown):
		return &wrapped{err.Error(), api.ErrUnavailable}
	}
	return err
}

func peerName(r *http.Request) string {
	p, _ := PeerFrom(r.Context())
	return "uid " + strconv.Itoa(p.UID) + ", pid " + strconv.Itoa(p.PID)
}

// parseDuration reads an optional, non-negative Go duration from a request
// field: nil when the field is empty.
func parseDuration(field, in string) (*time.Duration, error) {
	if in == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(in)
	if err != nil || d < 0 {
		return nil, badRequest("%s %q is not a duration such as \"10s\"", field, in)
	}
	return &d, nil
}
