package core

import "errors"

// ErrShuttingDown: podsup is stopping; the core refuses what would start
// something (a recreate request).
var ErrShuttingDown = errors.New("podsup is shutting down")
