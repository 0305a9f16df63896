package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/spec"
)

// liveSettings are the settings of the supervisor block that a reload
// applies while podsup runs: minimum_grace (the supervisor applies it to
// every stop that begins afterwards) and log_level (podsup's own log).
// The others are fixed when podsup starts: the control socket is bound
// with its group, the output hub is open with its format and directory,
// and systemd's readiness rule has been chosen.
var liveSettings = map[string]string{
	"minimum_grace": "for stops that begin from now on",
	"log_level":     "",
	"stop_order":    "for the next shutdown",
}

func (d *daemon) applyFile() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var diag strings.Builder
	cfg, err := d.source.load(&diag)
	if err != nil {
		return "", errors.New(strings.TrimSpace(diag.String()))
	}
	if d.socketOverride != "" {
		cfg.Supervisor.Socket = d.socketOverride
	}
	ch, err := d.stack.Reload(*cfg)
	if err != nil {
		return "", err
	}
	if slices.Contains(ch.Supervisor, "log_level") {
		d.level.set(cfg.Supervisor.LogLevel)
	}
	d.cfg = cfg
	msg := describeChanges(ch)
	d.log.Info().Str("config", d.source.String()).Msg("reloaded: " + msg)
	return msg, nil
}

// describeChanges says what a reload did, from the changes the supervisor
// acted on: which groups and processes were started, stopped or
// restarted, which supervisor settings took effect and which wait for
// podsup's restart.
func describeChanges(ch spec.Changes) string {
	if ch.Empty() {
		return "no change"
	}
	var parts []string
	add := func(what string, names []string) {
		if len(names) > 0 {
			parts = append(parts, what+" "+strings.Join(names, ", "))
		}
	}
	add("added groups", ch.AddedGroups)
	add("removed groups", ch.RemovedGroups)
	add("restarted groups", ch.ChangedGroups)
	names := make([]string, 0, len(ch.Groups))
	for g := range ch.Groups {
		if !slices.Contains(ch.ChangedGroups, g) {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	for _, g := range names {
		gc := ch.Groups[g]
		add("in "+g+": added", gc.Added)
		add("in "+g+": removed", gc.Removed)
		add("in "+g+": restarted", gc.Changed)
	}
	if len(parts) == 0 {
		parts = append(parts, "no group or process restarted")
	}
	var live, later []string
	for _, name := range ch.Supervisor {
		note, ok := liveSettings[name]
		switch {
		case !ok:
			later = append(later, "supervisor."+name)
		case note != "":
			live = append(live, "supervisor."+name+" ("+note+")")
		default:
			live = append(live, "supervisor."+name)
		}
	}
	if len(live) > 0 {
		parts = append(parts, "applied now: "+strings.Join(live, ", "))
	}
	if len(later) > 0 {
		parts = append(parts, "takes effect when podsup restarts: "+strings.Join(later, ", "))
	}
	return strings.Join(parts, "; ")
}

// logLevel is a writer that drops podsup's log lines below a level that a
// reload can change. A zerolog.Logger carries its level by value, and
// copies of podsup's logger live in the supervisor, the runtime and the
// API server: filtering where the lines are written reaches them all.
type logLevel struct {
	out   io.Writer
	level atomic.Int32
}

// set takes a zerolog level name; an empty or unknown one means info.
func (l *logLevel) set(name string) {
	level, err := zerolog.ParseLevel(name)
	if err != nil || name == "" {
		level = zerolog.InfoLevel
	}
	l.level.Store(int32(level))
}

func (l *logLevel) Write(p []byte) (int, error) { return l.out.Write(p) }

// WriteLevel is zerolog.LevelWriter: every line comes here with its level.
func (l *logLevel) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	if level < zerolog.Level(l.level.Load()) {
		return len(p), nil
	}
	return l.out.Write(p)
}
