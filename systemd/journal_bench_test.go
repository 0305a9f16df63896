package systemd

import (
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

// BenchmarkLogWriter is the cost of one of podsup's own lines on its way
// to journald (the send itself left out): a restart logs a few.
func BenchmarkLogWriter(b *testing.B) {
	line := []byte(`{"level":"warn","group":"web","process":"api","instance":"api-7","exit_code":3,"reason":"Error","restarts":12,"time":"2024-05-01T10:00:00.123456789Z","message":"process exited"}` + "\n")
	w := LogWriter{Send: func(string, journal.Priority, map[string]string) error { return nil }}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}
