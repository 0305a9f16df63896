package logs

import (
	"time"

	"github.com/podsup/podsup/spec"
)

// Stream names which of a process's outputs a line came from: its stdout
// or stderr, or the output of one of its lifecycle hooks (AppendHook).
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
	// HookPreStart .. HookPostStop are what a hook printed, in the log of
	// the instance it ran for: "hook:pre_start" and so on.
	HookPreStart
	HookPostStart
	HookPreStop
	HookPostStop
)

var streamNames = [...]string{
	Stdout: "stdout", Stderr: "stderr",
	HookPreStart: "hook:" + string(spec.PreStart), HookPostStart: "hook:" + string(spec.PostStart),
	HookPreStop: "hook:" + string(spec.PreStop), HookPostStop: "hook:" + string(spec.PostStop),
}

// String is the stream's name: in the JSON lines, the API's LogLine and
// (for a hook, in brackets) before the text of a console line.
func (s Stream) String() string {
	if int(s) < len(streamNames) {
		return streamNames[s]
	}
	return "stdout"
}

// Hook reports whether the stream is a hook's output.
func (s Stream) Hook() bool { return s >= HookPreStart && s <= HookPostStop }

// HookStream is the stream of the hook at point; Stdout for no hook point.
func HookStream(point spec.HookPoint) Stream {
	switch point {
	case spec.PreStart:
		return HookPreStart
	case spec.PostStart:
		return HookPostStart
	case spec.PreStop:
		return HookPreStop
	case spec.PostStop:
		return HookPostStop
	}
	return Stdout
}

// Line is one line a process wrote, without its newline.
type Line struct {
	Time     time.Time
	Group    string
	Process  string
	Instance string
	Stream   Stream
	Text     string
	// Partial means the line was longer than the line limit and continues
	// in the next Line of the same stream (CRI's "P" tag).
	Partial bool
	// Skipped, when > 0, makes this Line a marker rather than output: this
	// many lines were not delivered to a follower that fell behind.
	Skipped int
}
