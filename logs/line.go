package logs

import "time"

// Stream names which of a process's outputs a line came from.
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
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
