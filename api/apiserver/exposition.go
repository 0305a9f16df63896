package apiserver

import (
	"bufio"
	"math"
	"strconv"
	"strings"
)

// Prometheus's text exposition format, version 0.0.4, written directly:
// podsup's metric set is small and fixed, and a client library would link
// the protobuf format and its descriptors whatever a scrape asks for
// (docs/benchmarks.md, "Binary size"). A scrape writes one line at a time
// to the response, so it allocates nothing per sample.

// expositionContentType is what every scrape is answered with, whatever
// its Accept header asks: Prometheus falls back to this format when the
// one it prefers is not offered.
const expositionContentType = "text/plain; version=0.0.4; charset=utf-8"

// metricType is a family's # TYPE.
type metricType string

const (
	counterType   metricType = "counter"
	gaugeType     metricType = "gauge"
	histogramType metricType = "histogram"
	summaryType   metricType = "summary"
)

// family is a metric family's name, # HELP text and # TYPE.
type family struct {
	name string
	help string
	typ  metricType
}

// expoWriter writes families and their samples. A family's # HELP and
// # TYPE lines are written with its first sample, so that a family with
// none is left out, as client libraries leave it out.
type expoWriter struct {
	w       *bufio.Writer
	fam     *family
	pending bool // fam's header is not written yet
	labels  int  // labels written on the current line
	num     [32]byte
}

// begin makes f the family the following samples belong to.
func (e *expoWriter) begin(f *family) {
	e.fam, e.pending = f, true
}

// sample starts a sample line of the current family; suffix is "" or a
// histogram's or summary's "_bucket", "_sum", "_count". Labels follow
// (label), then the value (value or count) ends the line.
func (e *expoWriter) sample(suffix string) {
	if e.pending {
		e.pending = false
		e.w.WriteString("# HELP ")
		e.w.WriteString(e.fam.name)
		e.w.WriteByte(' ')
		writeEscaped(e.w, e.fam.help, false)
		e.w.WriteString("\n# TYPE ")
		e.w.WriteString(e.fam.name)
		e.w.WriteByte(' ')
		e.w.WriteString(string(e.fam.typ))
		e.w.WriteByte('\n')
	}
	e.w.WriteString(e.fam.name)
	e.w.WriteString(suffix)
	e.labels = 0
}

// label adds name="value" to the current line. Callers give a family's
// labels in the order of their names, as client libraries sort them.
func (e *expoWriter) label(name, value string) {
	if e.labels == 0 {
		e.w.WriteByte('{')
	} else {
		e.w.WriteByte(',')
	}
	e.labels++
	e.w.WriteString(name)
	e.w.WriteString(`="`)
	writeEscaped(e.w, value, true)
	e.w.WriteByte('"')
}

// value ends the line with v.
func (e *expoWriter) value(v float64) {
	e.end()
	e.w.Write(appendFloat(e.num[:0], v))
	e.w.WriteByte('\n')
}

// count ends the line with n, a histogram's or summary's count.
func (e *expoWriter) count(n uint64) {
	e.end()
	e.w.Write(strconv.AppendUint(e.num[:0], n, 10))
	e.w.WriteByte('\n')
}

func (e *expoWriter) end() {
	if e.labels > 0 {
		e.w.WriteByte('}')
	}
	e.w.WriteByte(' ')
}

// writeEscaped writes s escaped as the format asks: a backslash and a
// line feed in # HELP text, and a double quote as well in a label value.
func writeEscaped(w *bufio.Writer, s string, quote bool) {
	special := "\\\n"
	if quote {
		special = "\\\n\""
	}
	for {
		i := strings.IndexAny(s, special)
		if i < 0 {
			w.WriteString(s)
			return
		}
		w.WriteString(s[:i])
		switch s[i] {
		case '\n':
			w.WriteString(`\n`)
		case '"':
			w.WriteString(`\"`)
		default:
			w.WriteString(`\\`)
		}
		s = s[i+1:]
	}
}

// appendFloat formats v as client libraries do: the shortest
// representation that reads back as v, and +Inf, -Inf, NaN.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 0:
		return append(b, '0')
	case v == 1:
		return append(b, '1')
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
