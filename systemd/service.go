package systemd

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/supervisor"
)

// Supervisor is what a Service needs of *supervisor.Supervisor.
type Supervisor interface {
	Status() supervisor.Status
	NotifyStatus(ch chan<- struct{}) (stop func())
	Ping(ctx context.Context) error
	Stopping() <-chan struct{}
}

var _ Supervisor = (*supervisor.Supervisor)(nil)

// ReadyWhen values (spec.Supervisor.NotifyReady).
const (
	ReadyWhenReady   = "ready"
	ReadyWhenStarted = "started"
)

// Options configure a Service. The zero value of each is usable.
type Options struct {
	// Notifier is the service manager's socket; nil sends nothing.
	Notifier *Notifier
	// ReadyWhen is when READY=1 is sent: ReadyWhenReady (default: every
	// group started and ready) or ReadyWhenStarted (at once).
	ReadyWhen string
	// Watchdog is WATCHDOG_USEC; WATCHDOG=1 goes out every half of it. 0
	// disables the watchdog.
	Watchdog time.Duration
	Clock    clock.Clock
	Logger   zerolog.Logger
}

// Service tells the service manager how podsup is doing, following the
// sequence in the package doc.
type Service struct {
	sup   Supervisor
	n     *Notifier
	when  string
	wdog  time.Duration
	clock clock.Clock
	log   zerolog.Logger

	// mu is held while deciding and sending, so the stream's order is the
	// order of the decisions. It guards everything below.
	mu        sync.Mutex
	readySent bool
	reloading bool
	// reloadRefused: the last reload was refused, and ERRNO= says so.
	reloadRefused bool
	stopping      bool
	lastStatus    string
}

// NewService returns a Service for sup; nothing is sent before Run.
func NewService(sup Supervisor, opts Options) *Service {
	when := opts.ReadyWhen
	if when == "" {
		when = ReadyWhenReady
	}
	return &Service{sup: sup, n: opts.Notifier, when: when, wdog: opts.Watchdog,
		clock: clock.Or(opts.Clock), log: opts.Logger}
}

// Run follows the supervisor until ctx ends: status lines as snapshots
// change, READY=1 when due, STOPPING=1 when the supervisor begins to shut
// down, and the watchdog. Start it next to Supervisor.Run.
func (s *Service) Run(ctx context.Context) {
	if !s.n.Enabled() {
		// Outside systemd there is no one to tell: following every
		// status change would cost a full snapshot of every group per
		// change for nothing (a tenth of podsup's CPU while 10,000
		// processes stop).
		<-ctx.Done()
		return
	}
	changed := make(chan struct{}, 1)
	stop := s.sup.NotifyStatus(changed)
	defer stop()
	if s.wdog > 0 {
		go s.watchdog(ctx)
	}
	stopping := s.sup.Stopping()
	s.update()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			s.update()
		case <-stopping:
			stopping = nil
			s.Stop()
		}
	}
}

// update sends READY=1 when it is due and the status line when it changed.
func (s *Service) update() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reloading {
		return // Reload's READY=1 carries the line
	}
	st := s.sup.Status()
	line := Summary(st)
	if s.stopping {
		line = "stopping: " + line
	}
	if !s.readySent && !s.stopping && (s.when == ReadyWhenStarted || AllReady(st)) {
		s.readySent = true
		s.send("READY=1", "STATUS="+line)
		return
	}
	if line != s.lastStatus {
		s.send("STATUS=" + line)
	}
}

// Reload runs apply between RELOADING=1 (with MONOTONIC_USEC, which
// Type=notify-reload requires: systemd.service(5) "the service is expected
// to reply with a notification message via sd_notify(3) that contains the
// RELOADING=1 field in combination with MONOTONIC_USEC= set to the current
// monotonic time ... Once reloading is complete another notification
// message must be sent, containing READY=1") and READY=1, whatever apply
// returns: a refused configuration leaves the old one running, and the
// service is ready again either way. A refused one is told with the
// READY=1: STATUS= says it was refused and why (its first line), and
// ERRNO=22 (EINVAL) marks the unit, which `systemctl status` shows as its
// error until a reload succeeds (ERRNO=0). Before podsup was first ready,
// and once it is stopping, apply runs with nothing sent.
func (s *Service) Reload(apply func() error) error {
	s.mu.Lock()
	if !s.readySent || s.stopping || !s.n.Enabled() {
		s.mu.Unlock()
		return apply()
	}
	s.reloading = true
	s.send("RELOADING=1", "MONOTONIC_USEC="+monotonicUsec(), "STATUS=reloading configuration")
	s.mu.Unlock()

	err := apply()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.reloading = false
	if s.stopping {
		return err
	}
	switch {
	case err != nil:
		s.reloadRefused = true
		s.send("READY=1", "STATUS="+ReloadRefusedStatus(err), "ERRNO="+strconv.Itoa(int(unix.EINVAL)))
	case s.reloadRefused:
		s.reloadRefused = false
		s.send("READY=1", "STATUS="+Summary(s.sup.Status()), "ERRNO=0")
	default:
		s.send("READY=1", "STATUS="+Summary(s.sup.Status()))
	}
	return err
}

// statusErrorMax bounds the error text in a STATUS= line: systemd shows
// one line of it.
const statusErrorMax = 200

// ReloadRefusedStatus is the STATUS= line of a refused reload: its error's
// first line, quoted as a terminal needs it (systemctl status shows it),
// capped.
func ReloadRefusedStatus(err error) string {
	first, _, _ := strings.Cut(err.Error(), "\n")
	clean := termsafe.Quote(first)
	if len(clean) > statusErrorMax {
		cut := statusErrorMax
		for cut > 0 && !utf8.RuneStart(clean[cut]) {
			cut--
		}
		clean = clean[:cut] + "…"
	}
	return "reload refused, the running configuration stays: " + clean
}

// Stop sends STOPPING=1 once. Run calls it when the supervisor begins to
// shut down; call it too before podsup exits, so the message is out even
// if Run has not seen the shutdown yet.
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return
	}
	s.stopping = true
	s.send("STOPPING=1", "STATUS=stopping: "+Summary(s.sup.Status()))
}

// send writes one datagram; s.mu is held. A failed notification is logged
// and otherwise ignored: podsup keeps supervising.
func (s *Service) send(lines ...string) {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "STATUS="); ok {
			s.lastStatus = v
		}
	}
	if err := s.n.Send(lines...); err != nil {
		s.log.Warn().Err(err).Msg("sd_notify failed")
	}
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, as systemd reads it.
func monotonicUsec() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "0"
	}
	return strconv.FormatInt(ts.Nano()/1000, 10)
}
