package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
)

// wantRoles is the API's authorization table as designed (issue #25): a
// new endpoint fails TestEveryEndpointHasARole until it is given a role
// here, deliberately.
var wantRoles = map[string]Role{
	"GET /metrics":                                         RoleRead,
	"GET /v1/version":                                      RoleRead,
	"GET /v1/self":                                         RoleRead,
	"GET /v1/status":                                       RoleRead,
	"GET /v1/status/{group}":                               RoleRead,
	"GET /v1/status/{group}/{process}":                     RoleRead,
	"GET /v1/describe/{group}":                             RoleRead,
	"GET /v1/describe/{group}/{process}":                   RoleRead,
	"GET /v1/events":                                       RoleRead,
	"POST /v1/groups/{group}/{action}":                     RoleOperate,
	"POST /v1/groups/{group}/processes/{process}/{action}": RoleOperate,
	"POST /v1/reload":                                      RoleOperate,
	"POST /v1/shutdown":                                    RoleOperate,
	"GET /v1/logs/{group}/{process}":                       RoleLogs,
	"POST /v1/recreates":                                   RoleOperate,
	"GET /v1/recreates":                                    RoleRead,
	"GET /v1/recreates/{id}":                               RoleRead,
	"POST /v1/exec/{group}":                                RoleExec,
	"POST /v1/exec/{group}/{process}":                      RoleExec,
	"/":                                                    RoleRead,
}

const (
	testOwner = 1000
	testGroup = 4242
)

func testPolicy(roles Roles) Policy {
	return Policy{OwnerUID: testOwner, GroupID: testGroup, GroupName: "ops", GroupRoles: roles}
}

// stubbed is the server's handler for its real route table, with every
// route's handler replaced by one that records which route ran.
func stubbed(t testing.TB, pol Policy) (http.Handler, *[]string) {
	s := New(Backend{}, pol, zerolog.Nop())
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	ran := &[]string{}
	rs := s.routes()
	for i := range rs {
		pattern := rs[i].pattern
		rs[i].handler = func(w http.ResponseWriter, r *http.Request) {
			*ran = append(*ran, pattern)
			w.WriteHeader(http.StatusTeapot)
		}
	}
	return s.handler(rs), ran
}

func requestAs(method, target string, p Peer) *http.Request {
	r := httptest.NewRequest(method, "http://podsup/", nil)
	r.URL.Path = target // as sent, not cleaned by a parser
	r.URL.RawPath = ""
	r.RequestURI = target
	return r.WithContext(context.WithValue(r.Context(), peerKey{}, p))
}

// concrete turns a pattern into a path it matches.
func concrete(pattern string) (string, string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return "GET", "/nowhere"
	}
	for _, v := range []string{"{group}", "{process}", "{action}", "{id}"} {
		val := strings.Trim(v, "{}")
		if v == "{action}" {
			val = "restart"
		}
		path = strings.ReplaceAll(path, v, val)
	}
	return method, path
}

func TestEveryEndpointHasARole(t *testing.T) {
	s := New(Backend{}, testPolicy(0), zerolog.Nop())
	defer s.Shutdown(context.Background())
	seen := map[string]bool{}
	for _, rt := range s.routes() {
		want, ok := wantRoles[rt.pattern]
		if !ok {
			t.Errorf("endpoint %s is not in the authorization table: give it a role in wantRoles (and docs/config.md)", rt.pattern)
			continue
		}
		if rt.role != want || !rt.role.valid() {
			t.Errorf("endpoint %s needs %v, want %v", rt.pattern, rt.role, want)
		}
		seen[rt.pattern] = true
	}
	for p := range wantRoles {
		if !seen[p] {
			t.Errorf("wantRoles names %s, which the server does not serve", p)
		}
	}
	// A route without a role cannot be served.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a route without a role was registered")
			}
		}()
		s.handler([]route{{pattern: "GET /v1/x", handler: s.version}})
	}()

	member := Peer{PID: 1, UID: 1001, GID: 1001, Groups: []int{testGroup}, GroupsKnown: true}
	stranger := Peer{PID: 1, UID: 1002, GID: 1002, Groups: []int{5}, GroupsKnown: true}
	roleSets := []Roles{0, Roles(RoleOperate), Roles(RoleLogs), Roles(RoleExec), AllRoles}
	for _, granted := range roleSets {
		h, ran := stubbed(t, testPolicy(granted))
		for _, rt := range s.routes() {
			method, path := concrete(rt.pattern)
			for _, c := range []struct {
				name string
				p    Peer
				has  bool
			}{
				{"root", Peer{UID: 0, GID: 0}, true},
				{"owner", Peer{UID: testOwner, GID: testOwner}, true},
				{"member", member, (granted | Roles(RoleRead)).Has(rt.role)},
				{"primary-group member", Peer{UID: 1003, GID: testGroup, GroupsKnown: true}, (granted | Roles(RoleRead)).Has(rt.role)},
				{"stranger", stranger, false},
			} {
				*ran = nil
				w := httptest.NewRecorder()
				h.ServeHTTP(w, requestAs(method, path, c.p))
				reached := slices.Contains(*ran, rt.pattern)
				if reached != c.has {
					t.Errorf("granted %v: %s %s as %s reached the handler: %v, want %v", granted, method, path, c.name, reached, c.has)
				}
				if c.has {
					continue
				}
				var e api.Error
				_ = json.Unmarshal(w.Body.Bytes(), &e)
				if w.Code != http.StatusForbidden {
					t.Errorf("granted %v: %s %s as %s: %d, want 403", granted, method, path, c.name, w.Code)
				}
				if c.name == "stranger" {
					if !strings.Contains(e.Message, "may not use podsup's control socket") {
						t.Errorf("a stranger's refusal: %q", e.Message)
					}
					continue
				}
				for _, part := range []string{"uid " + strconv.Itoa(c.p.UID) + " may not", "the " + rt.role.String() + " role", `socket_group "ops"`, "supervisor.socket_group_roles"} {
					if !strings.Contains(e.Message, part) {
						t.Errorf("%s %s refused with %q, which does not name %q", method, path, e.Message, part)
					}
				}
			}
		}
	}
}

func TestUnknownPathsTellStrangersNothing(t *testing.T) {
	h, _ := stubbed(t, testPolicy(0))
	for _, c := range []struct {
		p    Peer
		code int
	}{
		{Peer{UID: 1002, GID: 1002, GroupsKnown: true}, http.StatusForbidden},
		{Peer{UID: 1001, GID: testGroup, GroupsKnown: true}, http.StatusTeapot}, // the catch-all's stub: 404 in earnest
	} {
		for _, path := range []string{"/v2/secret", "/v1/exec", "/v1/logs/x"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, requestAs("GET", path, c.p))
			if w.Code != c.code {
				t.Errorf("GET %s as uid %d: %d, want %d", path, c.p.UID, w.Code, c.code)
			}
		}
	}
	// And for real: the catch-all says 404.
	s := New(Backend{}, testPolicy(0), zerolog.Nop())
	defer s.Shutdown(context.Background())
	w := httptest.NewRecorder()
	s.handler(s.routes()).ServeHTTP(w, requestAs("GET", "/v2/secret", Peer{UID: 1001, GID: testGroup, GroupsKnown: true}))
	if w.Code != http.StatusNotFound {
		t.Errorf("a member's unknown path: %d", w.Code)
	}
}

func TestParseRolesKnowsTheConfigsRoles(t *testing.T) {
	rs, err := ParseRoles(spec.SocketGroupRoleNames)
	if err != nil || rs != AllRoles {
		t.Fatalf("ParseRoles(%v) = %v, %v; want every role", spec.SocketGroupRoleNames, rs, err)
	}
	if rs, err := ParseRoles(nil); err != nil || rs != Roles(RoleRead) {
		t.Fatalf("no roles named: %v, %v; want read alone", rs, err)
	}
	if _, err := ParseRoles([]string{"root"}); err == nil || !strings.Contains(err.Error(), `unknown role "root"`) {
		t.Fatalf("an unknown role: %v", err)
	}
}

func TestPolicyUsesTheKernelsGroupsNotProc(t *testing.T) {
	pol := testPolicy(0)
	// A pid whose /proc entry says nothing of the group (pid 1, root's
	// init): the socket option's groups decide.
	if !pol.Allows(Peer{PID: 1, UID: 1001, GID: 1001, Groups: []int{7, testGroup}, GroupsKnown: true}) {
		t.Error("a member by SO_PEERGROUPS was refused")
	}
	if pol.Allows(Peer{PID: 1, UID: 1001, GID: 1001, Groups: nil, GroupsKnown: true}) {
		t.Error("a peer with no groups was admitted")
	}
}

var zeroLog = zerolog.Nop()

func withPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}
