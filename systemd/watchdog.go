package systemd

import "context"

// watchdog sends WATCHDOG=1 every half interval, each time only after a
// Ping proved that every worker loop of the supervisor answered within
// that half interval. A wedged loop makes the pings fail, the watchdog
// starves, and systemd restarts podsup after the full interval: a
// free-running ticker would keep a wedged podsup alive.
func (s *Service) watchdog(ctx context.Context) {
	half := s.wdog / 2
	for {
		tick := s.clock.NewTimer(half)
		if err := s.ping(ctx); err == nil {
			if err := s.n.Send("WATCHDOG=1"); err != nil {
				s.log.Warn().Err(err).Msg("sd_notify WATCHDOG=1 failed")
			}
		} else if ctx.Err() == nil {
			s.log.Error().Err(err).Msg("the supervisor's loops did not answer: not feeding systemd's watchdog")
		}
		select {
		case <-ctx.Done():
			tick.Stop()
			return
		case <-tick.C():
		}
	}
}

// ping asks the supervisor for a round-trip, giving up after half the
// watchdog interval on the Service's clock.
func (s *Service) ping(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timeout := s.clock.AfterFunc(s.wdog/2, cancel)
	defer timeout.Stop()
	return s.sup.Ping(ctx)
}
