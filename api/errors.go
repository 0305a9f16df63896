package api

import (
	"errors"
	"net/http"
)

// Error is the body of every failed request, and what the client returns.
type Error struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Error classes of the protocol. A server's backend wraps them to say what
// went wrong; the server answers each with its HTTP status code (404, 400,
// 409, 503, 413), which the client returns in an *Error.
var (
	ErrNotFound    = errors.New("not found")
	ErrBadRequest  = errors.New("bad request")
	ErrConflict    = errors.New("conflict")
	ErrUnavailable = errors.New("unavailable")
	ErrTooLarge    = errors.New("request too large")
)

// IsNotFound reports whether err says a named group, process or request
// does not exist (HTTP 404 from the server).
func IsNotFound(err error) bool {
	var ae *Error
	return errors.Is(err, ErrNotFound) || (errors.As(err, &ae) && ae.Status == http.StatusNotFound)
}
