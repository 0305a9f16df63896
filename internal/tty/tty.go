// Package tty is the little of a terminal that podsup's client commands
// need: whether a file is a terminal, its size, raw mode for `podsup top`,
// and whether colour is wanted. It is built on golang.org/x/sys/unix's
// termios calls, which podsup already links, rather than a terminal
// library (docs/benchmarks.md has what one would add).
package tty

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// Size is the terminal's width and height in cells; false when fd is not
// a terminal or the terminal does not know (a pseudo-terminal never
// sized).
func Size(fd int) (width, height int, ok bool) {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}

// MakeRaw puts the terminal fd in raw mode (no echo, no line editing, no
// signals from ^C, no output processing) and returns the function that
// restores the mode it had.
func MakeRaw(fd int) (restore func() error, err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	// cfmakeraw(3), as x/term.MakeRaw does it.
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() error { return unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// Dumb reports whether TERM names a terminal without cursor addressing
// (TERM=dumb, or TERM unset), where a full-screen view cannot be drawn.
func Dumb() bool {
	t := os.Getenv("TERM")
	return t == "" || t == "dumb"
}

// ColorWanted reports whether to colour output written to f: only on a
// terminal that is not dumb, and never when NO_COLOR is set to anything
// (https://no-color.org).
func ColorWanted(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" || Dumb() {
		return false
	}
	return IsTerminal(int(f.Fd()))
}

// prefixColors are docker compose's colours for service names, in its
// order (SGR codes: cyan, yellow, green, magenta, blue, then their bright
// forms).
var prefixColors = []int{36, 33, 32, 35, 34, 96, 93, 92, 95, 94}

// PrefixColor is the SGR sequence of the i-th name shown: `podsup up`
// and `podsup logs` colour each process's prefix in turn.
func PrefixColor(i int) string {
	return "\x1b[" + strconv.Itoa(prefixColors[i%len(prefixColors)]) + "m"
}

// Reset ends a colour.
const Reset = "\x1b[0m"

// AppendPrefix appends the prefix docker compose puts before a process's
// lines: name padded to width, " | ", with name and bar in color (an SGR
// sequence from PrefixColor, or "" for none).
func AppendPrefix(b []byte, name string, width int, color string) []byte {
	b = append(b, color...)
	b = append(b, name...)
	for i := len(name); i < width; i++ {
		b = append(b, ' ')
	}
	b = append(b, " |"...)
	if color != "" {
		b = append(b, Reset...)
	}
	return append(b, ' ')
}
