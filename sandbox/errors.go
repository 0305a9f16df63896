package sandbox

import "errors"

// Error classes of Runtime. Each says what the caller should do next
// (the containerd errdefs idea); errors are returned wrapped, test them with
// errors.Is (or IsNotFound).
var (
	// ErrNotFound: no sandbox or process has that id (never created, or
	// removed). Do not retry; create it first.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: the id is taken. Pick another or remove the old one.
	ErrAlreadyExists = errors.New("already exists")
	// ErrFailedPrecondition: the object is in the wrong state for the call
	// (starting a process twice, creating one in a sandbox being deleted).
	// Look at its status; retrying the same call will not help.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrInvalidArgument: the request itself is wrong (a bad id, an empty
	// command, an unknown namespace). Fix the request.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnavailable: the host cannot do what was asked (resource limits
	// without cgroups, namespaces without privileges). Change the request
	// or the host.
	ErrUnavailable = errors.New("unavailable")
)

// IsNotFound reports whether err is of class ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
