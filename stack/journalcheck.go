package stack

import (
	"fmt"
	"os"

	"github.com/podsup/podsup/spec"
)

// journaldSocket is where journald takes entries (go-systemd's
// journal.Send writes there); without it no journal = true can work here.
const journaldSocket = "/run/systemd/journal/socket"

// journalProcesses names the processes whose log block asks for the
// journal (journal = true): the first, and how many.
func journalProcesses(cfg *spec.Config) (first []string, n int) {
	for _, g := range cfg.Groups {
		for _, list := range []struct {
			kind  string
			procs []spec.Process
		}{{"init", g.Init}, {"process", g.Processes}} {
			for _, p := range list.procs {
				if p.Log.Journal {
					if n == 0 {
						first = []string{"group", g.Name, list.kind, p.Name, "log", "journal"}
					}
					n++
				}
			}
		}
	}
	return first, n
}

// JournalWarning is podsup up's one line at start-up when processes ask for
// the journal (log { journal = true }) and podsup's stderr is not the
// journal (journalOn false: podsup runs outside systemd's
// StandardError=journal): their lines then reach journald by no path,
// only podsup's output, podsup logs and log_dir. Empty when there is
// nothing to say.
func JournalWarning(cfg *spec.Config, journalOn bool) string {
	first, n := journalProcesses(cfg)
	if n == 0 || journalOn {
		return ""
	}
	who := first[1] + "/" + first[3]
	if n > 1 {
		who += fmt.Sprintf(" and %d more", n-1)
	}
	return "journal = true (" + who + ") sends nothing to journald: podsup's stderr is not the journal, so their lines go to podsup's output, podsup logs and log_dir only; run podsup under systemd (StandardError=journal, as contrib/systemd/podsup.service does) to send them"
}

// journalHostWarnings is validate's host-dependent warning for journal =
// true on a host without journald: one, on the first process that asks.
func journalHostWarnings(cfg *spec.Config) spec.Errors {
	first, n := journalProcesses(cfg)
	if n == 0 {
		return nil
	}
	if _, err := os.Stat(journaldSocket); err == nil {
		return nil // journald runs: podsup under systemd sends to it
	}
	msg := "this host has no journald (" + journaldSocket + " is missing): journal = true sends nothing, the lines go to podsup's output, podsup logs and log_dir only"
	if n > 1 {
		msg += fmt.Sprintf(" (%d processes ask for it)", n)
	}
	return spec.Errors{&spec.FieldError{Path: first, Msg: msg}}
}
