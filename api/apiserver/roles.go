package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
)

// Role is one kind of access to the API. Every endpoint needs exactly one
// (route); a peer has a set of them (Policy.Roles).
type Role uint8

// The roles. Root and podsup's own uid have all of them; members of the
// socket group have RoleRead and what supervisor.socket_group_roles adds.
const (
	// RoleRead sees state: version, self, status (and its watch),
	// describe, events (and their follow), metrics, recreates: what
	// `podsup status`, `health` and `wait` use.
	RoleRead Role = 1 << iota
	// RoleOperate changes it: start, stop, restart, reload, shutdown,
	// recreate.
	RoleOperate
	// RoleLogs reads process output, which carries whatever the processes
	// print (secrets included).
	RoleLogs
	// RoleExec runs commands in a group's sandbox: as a process's user
	// (never root for a peer that is not root) or as the peer's own uid.
	RoleExec

	roleEnd
)

// Roles is a set of roles.
type Roles uint8

// AllRoles is what root and podsup's own uid have.
const AllRoles = Roles(roleEnd - 1)

// Has reports whether r is in the set.
func (rs Roles) Has(r Role) bool { return rs&Roles(r) != 0 }

func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleOperate:
		return "operate"
	case RoleLogs:
		return "logs"
	case RoleExec:
		return "exec"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// valid is one of the roles above (exactly one bit).
func (r Role) valid() bool { return r != 0 && r < roleEnd && r&(r-1) == 0 }

// ParseRoles reads supervisor.socket_group_roles (spec.SocketGroupRoleNames):
// the set always holds RoleRead, which every member of the socket group has.
func ParseRoles(names []string) (Roles, error) {
	rs := Roles(RoleRead)
	for _, n := range names {
		found := false
		for r := Role(1); r < roleEnd; r <<= 1 {
			if r.String() == n {
				rs |= Roles(r)
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown role %q: use %s", n, strings.Join(spec.SocketGroupRoleNames, ", "))
		}
	}
	return rs, nil
}

// route is one endpoint: its pattern (http.ServeMux's "METHOD /path"), the
// one role it needs and its handler. New builds the mux from these alone,
// and checks the role before the handler runs, so an endpoint cannot be
// served without a role: endpoint's role must be one of the roles above
// (New panics otherwise, and TestEveryEndpointHasARole enumerates them).
type route struct {
	pattern string
	role    Role
	handler http.HandlerFunc
	// stream, when not nil, says whether a request is a long-lived stream
	// (a follower), counted against the followers' limits.
	stream func(*http.Request) bool
}

func endpoint(role Role, pattern string, h http.HandlerFunc) route {
	return route{pattern: pattern, role: role, handler: h}
}

func (r route) streams(f func(*http.Request) bool) route {
	r.stream = f
	return r
}

func query(name string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.URL.Query().Get(name) == "true" }
}

func always(*http.Request) bool { return true }

// routes is the API: every endpoint with its role. The catch-all answers
// 404 to a peer that may read (any peer the policy admits).
func (s *Server) routes() []route {
	return []route{
		endpoint(RoleRead, "GET /metrics", s.metrics.ServeHTTP),
		endpoint(RoleRead, "GET /v1/version", s.version),
		endpoint(RoleRead, "GET /v1/self", s.self),
		endpoint(RoleRead, "GET /v1/status", s.status).streams(query("watch")),
		endpoint(RoleRead, "GET /v1/status/{group}", s.status).streams(query("watch")),
		endpoint(RoleRead, "GET /v1/status/{group}/{process}", s.status).streams(query("watch")),
		endpoint(RoleRead, "GET /v1/describe/{group}", s.describe),
		endpoint(RoleRead, "GET /v1/describe/{group}/{process}", s.describe),
		endpoint(RoleRead, "GET /v1/events", s.events).streams(query("follow")),
		endpoint(RoleOperate, "POST /v1/groups/{group}/{action}", s.action),
		endpoint(RoleOperate, "POST /v1/groups/{group}/processes/{process}/{action}", s.action),
		endpoint(RoleOperate, "POST /v1/reload", s.reload),
		endpoint(RoleOperate, "POST /v1/shutdown", s.shutdown),
		endpoint(RoleLogs, "GET /v1/logs/{group}/{process}", s.logs).streams(query("follow")),
		endpoint(RoleOperate, "POST /v1/recreates", s.createRecreate),
		endpoint(RoleRead, "GET /v1/recreates", s.listRecreates),
		endpoint(RoleRead, "GET /v1/recreates/{id}", s.getRecreate),
		endpoint(RoleExec, "POST /v1/exec/{group}", s.exec).streams(always),
		endpoint(RoleExec, "POST /v1/exec/{group}/{process}", s.exec).streams(always),
		endpoint(RoleRead, "/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, &pathError{r.Method + " " + r.URL.Path})
		}),
	}
}

// handler is the whole API for the routes rs: peers the policy does not
// admit are refused before anything else (an unknown path's 404 included),
// then each route checks its own role, then takes a follower's slot when
// the request is a stream.
func (s *Server) handler(rs []route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range rs {
		if !rt.role.valid() {
			panic("apiserver: endpoint " + rt.pattern + " has no role")
		}
		mux.Handle(rt.pattern, s.guard(rt))
	}
	return s.authorize(mux)
}

// authorize admits only peers the policy gives some role (SO_PEERCRED).
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PeerFrom(r.Context())
		if !ok || !s.policy.Allows(p) {
			s.log.Warn().Str("peer", p.String()).Str("request", r.Method+" "+r.URL.Path).Msg("refused an API caller that is neither root, podsup's user nor in the socket group")
			writeError(w, errForbiddenFor(p))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard runs rt's handler for a peer that has rt's role.
func (s *Server) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PeerFrom(r.Context())
		if !ok || !s.policy.Roles(p).Has(rt.role) {
			s.log.Warn().Str("peer", p.String()).Str("request", r.Method+" "+r.URL.Path).Str("role", rt.role.String()).Msg("refused an API caller without the endpoint's role")
			writeError(w, &roleError{p: p, role: rt.role, group: s.policy.GroupName})
			return
		}
		if rt.stream != nil && rt.stream(r) {
			release, err := s.limits.follow(p, s.policy.Trusted(p))
			if err != nil {
				writeJSON(w, http.StatusTooManyRequests, &api.Error{Status: http.StatusTooManyRequests, Message: err.Error()})
				return
			}
			defer release()
		}
		rt.handler(w, r)
	})
}

// roleError is a 403 for a peer the policy admits without the role an
// endpoint needs: it names the role and what grants it.
type roleError struct {
	p     Peer
	role  Role
	group string
}

func (e *roleError) Error() string {
	verb := map[Role]string{
		RoleRead:    "read podsup's state",
		RoleOperate: "operate (start, stop, restart, reload, shutdown, recreate)",
		RoleLogs:    "read logs",
		RoleExec:    "exec",
	}[e.role]
	return fmt.Sprintf("permission denied: uid %d may not %s: the %s role is not granted to socket_group %q (supervisor.socket_group_roles)",
		e.p.UID, verb, e.role, e.group)
}
func (e *roleError) Unwrap() error { return errForbidden }

func errForbiddenFor(p Peer) error {
	return &forbiddenError{p}
}

type forbiddenError struct{ p Peer }

func (e *forbiddenError) Error() string {
	return "permission denied: uid " + strconv.Itoa(e.p.UID) + " may not use podsup's control socket (root, podsup's own user and the configured socket_group may)"
}
func (e *forbiddenError) Unwrap() error { return errForbidden }
