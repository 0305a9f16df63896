// Package systemd owns podsup's side of running under systemd as a service:
// the sd_notify stream to the service manager (readiness, a one-line
// status, reloads, shutdown, the watchdog), the sockets systemd passes by
// socket activation, and sending log lines to journald with fields.
//
// The children's side (a NOTIFY_SOCKET per process, the s6 fd protocol,
// handing activation sockets to a process) is package notify.
//
// # The notify stream
//
// Every message is one datagram to NOTIFY_SOCKET; nothing is sent when it
// is unset. For `podsup up` under Type=notify or Type=notify-reload (which
// contrib/systemd/podsup.service uses: systemd sends SIGHUP and waits for
// the READY=1) the stream is exactly:
//
//	start     STATUS=<summary>                   0..n times, as groups start
//	          READY=1                            once: every group started and
//	          STATUS=<summary>                   ready (notify_ready = "ready"),
//	                                             or at once (notify_ready = "started")
//	          STATUS=<summary>                   0..n times, whenever it changes
//	reload    RELOADING=1                        SIGHUP or `podsup reload`, only
//	          MONOTONIC_USEC=<CLOCK_MONOTONIC µs> after READY=1 was sent
//	          STATUS=reloading configuration
//	          READY=1                            once the new configuration is
//	          STATUS=<summary>                   applied
//	          [ERRNO=0]                          (after a refused one)
//	      or  READY=1                            when it was refused (the old
//	          STATUS=reload refused, ...: <why>  one stays): ERRNO marks the unit
//	          ERRNO=22                           in systemctl status until a
//	                                             reload succeeds
//	stop      STOPPING=1                         at the first shutdown request
//	          STATUS=stopping: <summary>         (signal, API, critical exit)
//	          STATUS=stopping: <summary>         0..n times, as groups stop
//
// where <summary> is "3/3 groups ready, 0 in back-off" (processes waiting in
// CrashLoopBackOff). Independently, WATCHDOG=1 is sent every half of
// WATCHDOG_USEC, but only after Supervisor.Ping proved that every group's
// worker loop answered: a wedged podsup stops feeding the watchdog and
// systemd restarts it, instead of a free-running ticker keeping it alive.
// No status line is sent between RELOADING=1 and its READY=1, and after
// STOPPING=1 no READY=1 is ever sent.
//
// # Why not daemon.SdNotify
//
// go-systemd's daemon.SdNotify reads NOTIFY_SOCKET from the environment on
// every call, so the variable would have to stay in podsup's environment
// and every supervised process would inherit it (systemd then logs each of
// their messages as refused, NotifyAccess=main). The Notifier reads the
// address once, removes NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from
// the environment, and writes the same datagrams (daemon.SdNotify's wire
// format, abstract "@" addresses included). The watchdog interval is
// parsed by go-systemd's daemon.SdWatchdogEnabled.
//
// # Journal
//
// When podsup's stderr is the journal (JOURNAL_STREAM names fd 2's
// device:inode), its own log lines go to journald through go-systemd's
// journal package with SYSLOG_IDENTIFIER=podsup, PRIORITY from the zerolog
// level and the log fields as PODSUP_* fields (LogWriter); process output
// asked for with log { journal = true } goes the same way with
// PODSUP_GROUP, PODSUP_PROCESS, PODSUP_STREAM and a priority from the
// stream or a "<N>" prefix (ProcessWriter).
package systemd
