package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/api"
)

// recordingLogs answers every request with one line and remembers the query.
type recordingLogs struct{ got []LogQuery }

func (r *recordingLogs) Lines(group, process string, q LogQuery) ([]api.LogLine, error) {
	r.got = append(r.got, q)
	return []api.LogLine{{Group: group, Process: process, Line: "x"}}, nil
}

func (r *recordingLogs) Follow(ctx context.Context, group, process string, q LogQuery) (<-chan api.LogLine, error) {
	r.got = append(r.got, q)
	ch := make(chan api.LogLine)
	close(ch)
	return ch, nil
}

func TestLogsQueryParameters(t *testing.T) {
	src := &recordingLogs{}
	s := New(Backend{Logs: src}, Policy{}, zerolog.Nop())
	get := func(query string) int {
		r := httptest.NewRequest(http.MethodGet, "/v1/logs/web/api?"+query, nil)
		r.SetPathValue("group", "web")
		r.SetPathValue("process", "api")
		w := httptest.NewRecorder()
		s.logs(w, r)
		return w.Code
	}
	since := time.Date(2026, 11, 25, 4, 10, 41, 203117000, time.UTC)
	for _, c := range []struct {
		query string
		code  int
		want  LogQuery
	}{
		{"", 200, LogQuery{Tail: -1}},
		{"tail=5&since=2026-11-25T04:10:41.203117Z", 200, LogQuery{Tail: 5, Since: since}},
		{"follow=true&since=2026-11-25T04:10:41.203117Z", 200, LogQuery{Tail: -1, Since: since}},
		// Without a supervisor to name the last terminated instance, the
		// log source's own notion of the previous one.
		{"previous=true", 200, LogQuery{Tail: -1, Previous: true}},
		{"since=10m", 400, LogQuery{}},
		{"tail=-2", 400, LogQuery{}},
	} {
		src.got = nil
		if code := get(c.query); code != c.code {
			t.Errorf("?%s: %d, want %d", c.query, code, c.code)
			continue
		}
		if c.code != 200 {
			if len(src.got) != 0 {
				t.Errorf("?%s reached the log source: %+v", c.query, src.got)
			}
			continue
		}
		if len(src.got) != 1 || !src.got[0].Since.Equal(c.want.Since) || src.got[0].Tail != c.want.Tail || src.got[0].Previous != c.want.Previous || src.got[0].Instance != "" {
			t.Errorf("?%s asked %+v, want %+v", c.query, src.got, c.want)
		}
	}
}
