package main

import (
	"context"
	"errors"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/api/apiserver"
	"github.com/podsup/podsup/logs"
)

// hubLogs serves the API's logs endpoints from the hub.
type hubLogs struct{ hub *logs.Hub }

func (h hubLogs) Lines(group, process string, q apiserver.LogQuery) ([]api.LogLine, error) {
	lines, err := h.hub.Lines(group, process, logs.Query{Tail: q.Tail, Previous: q.Previous, Instance: q.Instance, Since: q.Since})
	if err != nil {
		return nil, classifyLogErr(err)
	}
	out := make([]api.LogLine, len(lines))
	for i, l := range lines {
		out[i] = toAPILine(l)
	}
	return out, nil
}

func (h hubLogs) Follow(ctx context.Context, group, process string, q apiserver.LogQuery) (<-chan api.LogLine, error) {
	ch, err := h.hub.FollowQuery(ctx, group, process, logs.Query{Tail: q.Tail, Since: q.Since})
	if err != nil {
		return nil, classifyLogErr(err)
	}
	out := make(chan api.LogLine)
	go func() {
		defer close(out)
		for l := range ch {
			select {
			case out <- toAPILine(l):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func toAPILine(l logs.Line) api.LogLine {
	return api.LogLine{Time: l.Time, Group: l.Group, Process: l.Process, Instance: l.Instance,
		Stream: l.Stream.String(), Line: l.Text, Skipped: l.Skipped}
}

func classifyLogErr(err error) error {
	if errors.Is(err, logs.ErrUnknownProcess) || errors.Is(err, logs.ErrNoPrevious) || errors.Is(err, logs.ErrNotCaptured) {
		return &notFoundErr{err}
	}
	return err
}

type notFoundErr struct{ err error }

func (e *notFoundErr) Error() string { return e.err.Error() }
func (e *notFoundErr) Unwrap() error { return api.ErrNotFound }
