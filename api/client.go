package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Client talks to a podsup over its control socket. Before it sends a
// request on a new connection it checks who listens (SO_PEERCRED): a
// server that is neither root nor the client's own user is refused with
// an *UntrustedServerError, and nothing is sent to it.
type Client struct {
	Socket string
	// Timeout, when positive, bounds how long a request waits for
	// podsup: a short request (status, describe, an action, ...) as a
	// whole, a stream (events and logs that follow, a watch, exec) only
	// until its answer begins, never once it runs. A request that runs
	// out of time fails with a *TimeoutError. NewClient leaves it zero
	// (no limit); the podsup CLI sets it from --request-timeout.
	Timeout time.Duration
	hc      *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			if err := checkServer(conn, path); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		},
		DisableCompression: true,
	}
	return &Client{Socket: path, hc: &http.Client{Transport: tr}}
}

// Version asks which podsup answers.
func (c *Client) Version(ctx context.Context) (VersionResponse, error) {
	var v VersionResponse
	return v, c.do(ctx, http.MethodGet, "/v1/version", nil, &v)
}

// Self returns podsup's own resource use (goroutines, threads, fds, RSS).
func (c *Client) Self(ctx context.Context) (SelfResponse, error) {
	var v SelfResponse
	return v, c.do(ctx, http.MethodGet, "/v1/self", nil, &v)
}

// Status returns every group, one group, or one process (group/process).
func (c *Client) Status(ctx context.Context, group, process string) (StatusResponse, error) {
	var s StatusResponse
	return s, c.do(ctx, http.MethodGet, statusPath(group, process), nil, &s)
}

func statusPath(group, process string) string {
	p := "/v1/status"
	if group != "" {
		p += "/" + url.PathEscape(group)
		if process != "" {
			p += "/" + url.PathEscape(process)
		}
	}
	return p
}

// StatusWide is Status with each running process's cgroup filled in
// (`podsup status -o wide`), which costs the server a read of /proc per
// process.
func (c *Client) StatusWide(ctx context.Context, group, process string) (StatusResponse, error) {
	var s StatusResponse
	return s, c.do(ctx, http.MethodGet, statusPath(group, process)+"?wide=true", nil, &s)
}

// StatusUsage is Status with each running process's cgroup and what it
// uses now (CPU, memory, pids) filled in, as `podsup top` shows them: it
// costs the server a read of /proc and of the cgroup files per process.
func (c *Client) StatusUsage(ctx context.Context) (StatusResponse, error) {
	var s StatusResponse
	return s, c.do(ctx, http.MethodGet, "/v1/status?usage=true", nil, &s)
}

// Describe returns a group (or, with process, one of its processes) with
// its configuration, cgroup usage and recent events.
func (c *Client) Describe(ctx context.Context, group, process string) (DescribeResponse, error) {
	p := "/v1/describe/" + url.PathEscape(group)
	if process != "" {
		p += "/" + url.PathEscape(process)
	}
	var d DescribeResponse
	return d, c.do(ctx, http.MethodGet, p, nil, &d)
}

// Events calls fn for each kept event and, with follow, each new one until
// ctx ends.
func (c *Client) Events(ctx context.Context, follow bool, fn func(Event) error) error {
	return streamGet(c, ctx, "/v1/events?follow="+strconv.FormatBool(follow), fn)
}

// LogsOptions select the lines of ProcessLogs and LogsOf.
type LogsOptions struct {
	// Tail is how many of the last kept lines; -1 for all. The zero value
	// shows none, and with Follow only new lines.
	Tail int
	// Follow keeps streaming new lines until ctx ends.
	Follow bool
	// Previous asks for the last terminated instance (kubectl logs
	// --previous): the one before the current, or the current one while
	// the process waits in CrashLoopBackOff.
	Previous bool
	// Since, when not zero, keeps the lines captured at or after it.
	Since time.Time
}

func (o LogsOptions) query() string {
	q := url.Values{"tail": {strconv.Itoa(o.Tail)}, "follow": {strconv.FormatBool(o.Follow)}, "previous": {strconv.FormatBool(o.Previous)}}
	if !o.Since.IsZero() {
		q.Set("since", o.Since.UTC().Format(time.RFC3339Nano))
	}
	return q.Encode()
}

// ProcessLogs calls fn for each line of a process's output that o selects.
func (c *Client) ProcessLogs(ctx context.Context, group, process string, o LogsOptions, fn func(LogLine) error) error {
	return streamGet(c, ctx, "/v1/logs/"+url.PathEscape(group)+"/"+url.PathEscape(process)+"?"+o.query(), fn)
}

// Target names a process (Group/Process) or a whole group (Process empty).
type Target struct {
	Group, Process string
}

// LogsOf calls fn for each line of several processes' output: those named
// and every process of each group named alone (its init processes first,
// as the status lists them). Without Follow, the lines of all of them come
// in the order of their capture times; with Follow, the kept lines of each
// and then new lines as they arrive. fn is never called concurrently.
//
// Of a group, the processes that have nothing to show are passed over:
// output not captured (log mode passthrough), or, with Previous, no
// terminated instance yet. A process named explicitly, or a group none of
// whose processes has anything, is an error.
func (c *Client) LogsOf(ctx context.Context, targets []Target, o LogsOptions, fn func(LogLine) error) error {
	procs, err := c.expandTargets(ctx, targets)
	if err != nil {
		return err
	}
	if !o.Follow {
		var all []LogLine
		shown := map[string]bool{}
		for _, p := range procs {
			err := c.ProcessLogs(ctx, p.Group, p.Process, o, func(l LogLine) error {
				all = append(all, l)
				return nil
			})
			switch {
			case err == nil:
				shown[p.from] = true
			case !IsNotFound(err) || !p.expanded:
				return err
			}
		}
		for _, t := range targets {
			if t.Process == "" && !shown[t.Group] {
				return &Error{Status: http.StatusNotFound, Message: "no process of group " + strconv.Quote(t.Group) + " has output to show"}
			}
		}
		slices.SortStableFunc(all, func(a, b LogLine) int { return a.Time.Compare(b.Time) })
		for _, l := range all {
			if err := fn(l); err != nil {
				return err
			}
		}
		return nil
	}
	return c.followMany(ctx, procs, o, fn)
}

// expanded is one process of a LogsOf request; from names the target it
// came from.
type expanded struct {
	Target
	from     string
	expanded bool // from a group: passed over when it has nothing
}

// ExpandTargets lists the processes that targets name, a group standing
// for its processes (init ones first), each once, in the order named.
func (c *Client) ExpandTargets(ctx context.Context, targets []Target) ([]Target, error) {
	ex, err := c.expandTargets(ctx, targets)
	if err != nil {
		return nil, err
	}
	out := make([]Target, len(ex))
	for i, e := range ex {
		out[i] = e.Target
	}
	return out, nil
}

func (c *Client) expandTargets(ctx context.Context, targets []Target) ([]expanded, error) {
	var out []expanded
	seen := map[Target]bool{}
	add := func(e expanded) {
		if !seen[e.Target] {
			seen[e.Target] = true
			out = append(out, e)
		}
	}
	var st *StatusResponse
	for _, t := range targets {
		if t.Process != "" {
			add(expanded{Target: t, from: t.Group + "/" + t.Process})
			continue
		}
		if st == nil {
			s, err := c.Status(ctx, "", "")
			if err != nil {
				return nil, err
			}
			st = &s
		}
		found := false
		for _, g := range st.Groups {
			if g.Name != t.Group {
				continue
			}
			found = true
			for _, p := range append(append([]ProcessStatus{}, g.Init...), g.Processes...) {
				add(expanded{Target: Target{g.Name, p.Name}, from: g.Name, expanded: true})
			}
		}
		if !found {
			return nil, &Error{Status: http.StatusNotFound, Message: "no group " + strconv.Quote(t.Group)}
		}
	}
	return out, nil
}

// followMany follows every process at once, one stream each, handing
// their lines to fn one at a time. The first error (of a stream or of fn)
// ends them all.
func (c *Client) followMany(ctx context.Context, procs []expanded, o LogsOptions, fn func(LogLine) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.ProcessLogs(ctx, p.Group, p.Process, o, func(l LogLine) error {
				mu.Lock()
				defer mu.Unlock()
				if firstErr != nil {
					return firstErr
				}
				return fn(l)
			})
			if err != nil && ctx.Err() == nil && !(p.expanded && IsNotFound(err)) {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// Action asks for start, stop or restart of a group, or of one process
// when process is not empty. grace may be "" (the configured one).
func (c *Client) Action(ctx context.Context, action, group, process, grace string) (ActionResponse, error) {
	p := "/v1/groups/" + url.PathEscape(group)
	if process != "" {
		p += "/processes/" + url.PathEscape(process)
	}
	var out ActionResponse
	return out, c.do(ctx, http.MethodPost, p+"/"+action, ActionRequest{Grace: grace}, &out)
}

// Reload asks podsup to re-read its configuration.
func (c *Client) Reload(ctx context.Context) (ReloadResponse, error) {
	var out ReloadResponse
	return out, c.do(ctx, http.MethodPost, "/v1/reload", nil, &out)
}

// Shutdown asks podsup to stop everything and exit.
func (c *Client) Shutdown(ctx context.Context, grace string) error {
	return c.do(ctx, http.MethodPost, "/v1/shutdown", ActionRequest{Grace: grace}, nil)
}

// Exec runs argv in a group's sandbox, copying its output, and returns its
// exit code. Given a process, argv runs as that process runs (its user and
// group, environment and working directory).
func (c *Client) Exec(ctx context.Context, group, process string, argv []string, stdout, stderr io.Writer) (int, error) {
	p := "/v1/exec/" + url.PathEscape(group)
	if process != "" {
		p += "/" + url.PathEscape(process)
	}
	code := -1
	var execErr error
	err := streamBody(c, ctx, http.MethodPost, p, ExecRequest{Command: argv}, func(f ExecFrame) error {
		switch {
		case f.ExitCode != nil:
			code = *f.ExitCode
			if f.Error != "" {
				execErr = errors.New(f.Error)
			}
		case f.Stream == "stderr":
			_, _ = stderr.Write(f.Data)
		default:
			_, _ = stdout.Write(f.Data)
		}
		return nil
	})
	if err != nil {
		return -1, err
	}
	if code < 0 {
		return -1, errors.New("exec: the connection closed before the command's exit code arrived")
	}
	return code, execErr
}

// Metrics returns GET /metrics: every metric in Prometheus's text
// exposition format, as a scraper gets it.
func (c *Client) Metrics(ctx context.Context, w io.Writer) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	resp, err := c.send(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return c.timedOut(ctx, err)
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return c.timedOut(ctx, err)
}

// withTimeout bounds ctx by c.Timeout, the cause of its end then a
// *TimeoutError.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, c.Timeout, &TimeoutError{Socket: c.Socket, Timeout: c.Timeout})
}

// timedOut is err, or the *TimeoutError when c.Timeout ended ctx.
func (c *Client) timedOut(ctx context.Context, err error) error {
	var te *TimeoutError
	if err != nil && ctx.Err() != nil && errors.As(context.Cause(ctx), &te) {
		return te
	}
	return err
}

// do is a short request: c.Timeout bounds all of it.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return c.timedOut(ctx, c.doUntimed(ctx, method, path, body, out))
}

func (c *Client) doUntimed(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("unable to read podsup's answer: %w", err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://podsup"+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.dialError(err)
	}
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Content-Type") != "application/json" {
		resp.Body.Close()
		return nil, &Error{Status: resp.StatusCode, Message: "podsup on " + c.Socket + " is overloaded (" + resp.Status + "): try again later"}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e Error
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Message == "" {
			e = Error{Status: resp.StatusCode, Message: resp.Status}
		}
		e.Status = resp.StatusCode
		return nil, &e
	}
	return resp, nil
}

// sendStream is send with c.Timeout on the wait for the answer's headers
// only.
func (c *Client) sendStream(ctx context.Context, method, path string, body any) (*http.Response, error) {
	if c.Timeout <= 0 {
		return c.send(ctx, method, path, body)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	te := &TimeoutError{Socket: c.Socket, Timeout: c.Timeout}
	timer := time.AfterFunc(c.Timeout, func() { cancel(te) })
	resp, err := c.send(sctx, method, path, body)
	if !timer.Stop() { // it fired: the answer came too late, if at all
		if err == nil {
			resp.Body.Close()
		}
		if ctx.Err() == nil {
			return nil, te
		}
		return nil, err
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose ends a stream's context with its body.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// dialError explains the usual reasons a socket cannot be reached.
func (c *Client) dialError(err error) error {
	var untrusted *UntrustedServerError
	switch {
	case errors.As(err, &untrusted):
		return untrusted
	case errors.Is(err, syscall.EAGAIN):
		return fmt.Errorf("podsup on %s is overloaded: its queue of new connections is full; try again later: %w", c.Socket, err)
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach podsup at %s: is `podsup up` running? (set --socket or PODSUP_SOCKET): %w", c.Socket, err)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("cannot open %s: permission denied (the socket is for root, podsup's user and its socket_group): %w", c.Socket, err)
	}
	return err
}

func streamGet[T any](c *Client, ctx context.Context, path string, fn func(T) error) error {
	return streamBody(c, ctx, http.MethodGet, path, nil, fn)
}

// streamBody calls fn for each JSON line of a streamed answer. c.Timeout
// bounds only the wait for the answer to begin: a stream that runs is
// never cut.
func streamBody[T any](c *Client, ctx context.Context, method, path string, body any, fn func(T) error) error {
	resp, err := c.sendStream(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("unable to read podsup's answer: %w", err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// Recreate asks for a recreate request and returns its status.
func (c *Client) Recreate(ctx context.Context, req RecreateRequest) (Recreate, error) {
	var out Recreate
	return out, c.do(ctx, http.MethodPost, "/v1/recreates", req, &out)
}

// Recreates lists the requests podsup keeps.
func (c *Client) Recreates(ctx context.Context) (RecreateList, error) {
	var out RecreateList
	return out, c.do(ctx, http.MethodGet, "/v1/recreates", nil, &out)
}

// RecreateStatus returns a request's status; with wait, once it completed.
func (c *Client) RecreateStatus(ctx context.Context, id string, wait bool) (Recreate, error) {
	var out Recreate
	p := "/v1/recreates/" + url.PathEscape(id) + "?wait=" + strconv.FormatBool(wait)
	if wait { // a long poll: it answers when the recreate is done
		return out, c.doUntimed(ctx, http.MethodGet, p, nil, &out)
	}
	return out, c.do(ctx, http.MethodGet, p, nil, &out)
}
