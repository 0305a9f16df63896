package supervisor

import "github.com/podsup/podsup/supervisor/internal/coresim"

// The worker's tests script the fake runtime's instances as the core's
// simulation scripts its own (package coresim).
type (
	simRun    = coresim.Run
	simScript = coresim.Script
)

var (
	constant      = coresim.Constant
	secs          = coresim.Secs
	assertTimes   = coresim.AssertTimes
	oneProcess    = coresim.OneProcess
	appAndSidecar = coresim.AppAndSidecar
	scaled        = coresim.Scaled
)
