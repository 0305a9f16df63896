package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error is the body of every failed request, and what the client returns.
type Error struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Error classes a Backend returns; the server maps them to status codes.
var (
	ErrNotFound     = errors.New("not found")
	ErrBadRequest   = errors.New("bad request")
	ErrConflict     = errors.New("conflict")
	ErrUnavailable  = errors.New("unavailable")
	ErrTooLarge     = errors.New("request too large")
	errForbidden    = errors.New("forbidden")
	errNoSuchMethod = errors.New("method not allowed")
)

// IsNotFound reports whether err says a named group, process or request
// does not exist (HTTP 404 from the server).
func IsNotFound(err error) bool {
	var ae *Error
	return errors.Is(err, ErrNotFound) || (errors.As(err, &ae) && ae.Status == http.StatusNotFound)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errNoSuchMethod):
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

func writeError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	writeJSON(w, status, &Error{Status: status, Message: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

// badRequest wraps a message as ErrBadRequest.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
