package httpget

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/podsup/podsup/spec"
)

// action is a GET of path on srv.
func action(t *testing.T, srv *httptest.Server, path string, headers map[string]string) spec.HTTPGetAction {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return spec.HTTPGetAction{Host: u.Hostname(), Port: port, Path: path, Headers: headers}
}

// TestNewSetsDefaultsTheActionLacks: the action's headers are sent as
// set, User-Agent and Accept only where it sets none, and its Host
// header becomes the request's Host.
func TestNewSetsDefaultsTheActionLacks(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r }))
	defer srv.Close()
	for _, tc := range []struct {
		name            string
		headers         map[string]string
		ua, accept      string
		wantUA, wantAcc string
		wantHost        string
	}{
		{name: "defaults", ua: "podsup-probe/1", accept: "*/*", wantUA: "podsup-probe/1", wantAcc: "*/*"},
		{name: "no accept", ua: "podsup-hook/1", wantUA: "podsup-hook/1"},
		{name: "own", headers: map[string]string{"user-agent": "me", "Accept": "text/plain", "host": "api.example"},
			ua: "podsup-probe/1", accept: "*/*", wantUA: "me", wantAcc: "text/plain", wantHost: "api.example"},
	} {
		req, err := New(action(t, srv, "/ready", tc.headers), tc.ua, tc.accept).WithContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := Client(0).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got.URL.Path != "/ready" || got.UserAgent() != tc.wantUA || got.Header.Get("Accept") != tc.wantAcc {
			t.Errorf("%s: path %q, User-Agent %q, Accept %q; want /ready, %q, %q", tc.name,
				got.URL.Path, got.UserAgent(), got.Header.Get("Accept"), tc.wantUA, tc.wantAcc)
		}
		if tc.wantHost != "" && got.Host != tc.wantHost {
			t.Errorf("%s: Host %q, want %q", tc.name, got.Host, tc.wantHost)
		}
	}
}

// TestClientFollowsOnlySameHostRedirects: a redirect on the same host is
// followed; one to another host ends with the 3xx.
func TestClientFollowsOnlySameHostRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/other":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		}
	}))
	defer srv.Close()
	for path, want := range map[string]int{"/same": http.StatusOK, "/other": http.StatusFound} {
		req, err := New(action(t, srv, path, nil), "", "").WithContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := Client(0).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", path, resp.StatusCode, want)
		}
	}
}
