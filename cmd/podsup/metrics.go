package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newMetricsCmd(f *ctlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "metrics",
		Short: "Print a running podsup's metrics in Prometheus's text format",
		Long: `Print what GET /metrics of the control socket answers: every process's
restarts, readiness, state, last exit and back-off, its cgroup's CPU, memory
and pids, podsup's events by reason, and podsup's own process and Go runtime
figures, in Prometheus's text exposition format. docs/metrics.md lists
every family, where it comes from and its kube-state-metrics or cAdvisor
counterpart.

A Prometheus server can scrape the control socket itself through a unix
socket proxy, or a TCP listener: supervisor { metrics_listen = "127.0.0.1:9310" }.`,
		Example: `  podsup metrics | grep podsup_process_restarts_total
  curl --unix-socket /run/podsup/podsup.sock http://podsup/metrics`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.client().Metrics(cmd.Context(), cmd.OutOrStdout())
		},
	}
}

// serveMetrics serves h (GET /metrics) on a TCP listener of its own, as
// supervisor.metrics_listen asks. It is read when podsup up starts: a
// reload that changes it is reported as waiting for a restart.
func serveMetrics(addr string, h http.Handler, log zerolog.Logger) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics_listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics listener stopped")
		}
	}()
	log.Info().Str("address", l.Addr().String()).Msg("serving metrics")
	return func() { _ = srv.Close() }, nil
}
