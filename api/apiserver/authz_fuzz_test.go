package apiserver

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// pathRole is the authorization table restated from the paths alone, with
// no ServeMux: what a request on this path does, so what role it needs.
func pathRole(method, path string) Role {
	switch {
	case method == "POST" && strings.HasPrefix(path, "/v1/exec/"):
		return RoleExec
	case method == "GET" && strings.HasPrefix(path, "/v1/logs/"):
		return RoleLogs
	case method == "POST" && (strings.HasPrefix(path, "/v1/groups/") || path == "/v1/reload" ||
		path == "/v1/shutdown" || path == "/v1/recreates"):
		return RoleOperate
	}
	return RoleRead
}

// FuzzAuthorize sends arbitrary requests (method, request target) as
// peers with arbitrary granted roles through the server's real route
// table: no request reaches a handler whose role the peer lacks, the
// handler a request reaches is the one its path calls for (path tricks
// such as //v1/exec/x, /v1/exec/../logs or encoded slashes included), and
// a peer outside the policy gets 403 for everything.
func FuzzAuthorize(f *testing.F) {
	for _, s := range []struct {
		method, target string
		roles, who     byte
	}{
		{"POST", "/v1/exec/web", 0, 2},
		{"POST", "//v1/exec/web/app", 0, 2},
		{"POST", "/v1/exec/../logs/web/app", 8, 2},
		{"GET", "/v1/logs/web/app", 0, 2},
		{"GET", "/v1/logs/web%2Fapp/x", 0, 2},
		{"POST", "/v1/exec%2Fweb", 0, 2},
		{"POST", "/v1/./exec/web", 0, 2},
		{"POST", "/v1/groups/web/stop", 4, 2},
		{"GET", "/v1/status?watch=true", 0, 3},
		{"POST", "/v1/shutdown", 15, 1},
		{"GET", "http://podsup/v1/logs/a/b", 0, 2},
		{"POST", "/v1/EXEC/web", 0, 2},
	} {
		f.Add(s.method, s.target, s.roles, s.who)
	}
	f.Fuzz(func(t *testing.T, method, target string, roles, who byte) {
		granted := Roles(roles) & AllRoles
		peers := []Peer{
			{UID: 0, GID: 0, GroupsKnown: true},
			{UID: testOwner, GID: testOwner, GroupsKnown: true},
			{UID: 1001, GID: 1001, Groups: []int{testGroup}, GroupsKnown: true},
			{UID: 1002, GID: 1002, Groups: []int{1}, GroupsKnown: true},
		}
		p := peers[int(who)%len(peers)]
		pol := testPolicy(granted)
		has := pol.Roles(p)

		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: podsup\r\n\r\n")))
		if err != nil {
			return // not a request a server would read
		}
		s := New(Backend{}, pol, zeroLog)
		defer s.Shutdown(t.Context())
		var ran []string
		var seen []string
		rs := s.routes()
		for i := range rs {
			pattern, role := rs[i].pattern, rs[i].role
			rs[i].handler = func(w http.ResponseWriter, r *http.Request) {
				ran = append(ran, pattern)
				seen = append(seen, r.URL.Path)
				if !has.Has(role) {
					t.Fatalf("%s %q reached %s (role %v) as uid %d with roles %v", method, target, pattern, role, p.UID, has)
				}
				w.WriteHeader(http.StatusTeapot)
			}
		}
		w := httptest.NewRecorder()
		req.RemoteAddr = "@"
		s.handler(rs).ServeHTTP(w, req.WithContext(withPeer(req.Context(), p)))
		if has == 0 {
			if w.Code != http.StatusForbidden || len(ran) != 0 {
				t.Fatalf("%s %q as a stranger: %d, reached %v", method, target, w.Code, ran)
			}
			return
		}
		if len(ran) > 1 {
			t.Fatalf("%s %q reached %v", method, target, ran)
		}
		if len(ran) == 1 && ran[0] != "/" {
			if want := pathRole(req.Method, seen[0]); want != roleOf(rs, ran[0]) {
				t.Fatalf("%s %q (path %q) reached %s, which needs %v; the path calls for %v", method, target, seen[0], ran[0], roleOf(rs, ran[0]), want)
			}
		}
		if w.Code == http.StatusForbidden {
			// Refused a peer the policy admits: only for a role it lacks,
			// which the answer names.
			if has == AllRoles || !strings.Contains(w.Body.String(), "role is not granted") {
				t.Fatalf("%s %q as uid %d with roles %v refused: %s", method, target, p.UID, has, w.Body)
			}
		}
	})
}

func roleOf(rs []route, pattern string) Role {
	for _, r := range rs {
		if r.pattern == pattern {
			return r.role
		}
	}
	return 0
}
