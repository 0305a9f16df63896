package core

import (
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func TestBackoff(t *testing.T) {
	at := func(s float64) time.Time { return clock.Epoch.Add(time.Duration(s * float64(time.Second))) }
	p := spec.Backoff{Initial: 10 * time.Second, Max: 40 * time.Second, Reset: 100 * time.Second}

	t.Run("B3 no entry is not in back-off", func(t *testing.T) {
		b := NewBackoff(p)
		if b.IsInBackOffSince("x", at(0), at(0)) {
			t.Error("B3: a key without entry must not be in back-off")
		}
		if b.Get("x") != 0 {
			t.Error("Get of a missing key must be 0")
		}
	})
	t.Run("B2 initial then doubling to max", func(t *testing.T) {
		b := NewBackoff(p)
		var got []time.Duration
		for i := 0; i < 5; i++ {
			b.Next("x", at(float64(i)), at(float64(i)))
			got = append(got, b.Get("x"))
		}
		assertTimes(t, "B2 back-offs", got, secs(10, 20, 40, 40, 40))
	})
	t.Run("B3 strict comparison", func(t *testing.T) {
		b := NewBackoff(p)
		b.Next("x", at(0), at(0))
		if !b.IsInBackOffSince("x", at(5), at(14.999)) {
			t.Error("B3: 9.999s after the finish is in a 10s back-off")
		}
		if b.IsInBackOffSince("x", at(5), at(15)) {
			t.Error("B3: now − t == backoff is not in back-off (strict)")
		}
	})
	t.Run("B2 lastUpdate is now, not eventTime", func(t *testing.T) {
		b := NewBackoff(p)
		b.Next("x", at(0), at(50)) // lastUpdate = 50
		// eventTime 140: 140 − 50 = 90, not > 100: not expired.
		b.Next("x", at(140), at(140))
		if b.Get("x") != 20*time.Second {
			t.Errorf("B2: lastUpdate must be the call's now; got back-off %s, want 20s", b.Get("x"))
		}
	})
	t.Run("B4 expiry judged with eventTime, strictly greater than reset", func(t *testing.T) {
		b := NewBackoff(p)
		b.Next("x", at(0), at(0))
		b.Next("x", at(1), at(1)) // 20s, lastUpdate 1
		if !b.IsInBackOffSince("x", at(101), at(101)) {
			t.Error("B4: eventTime − lastUpdate == reset is not expired")
		}
		if b.IsInBackOffSince("x", at(101.001), at(101.001)) {
			t.Error("B4: eventTime − lastUpdate > reset is expired: not in back-off")
		}
		b.Next("x", at(101.001), at(101.001))
		if b.Get("x") != 10*time.Second {
			t.Errorf("B4: an expired entry restarts at initial, got %s", b.Get("x"))
		}
	})
	t.Run("B12 keyed per process", func(t *testing.T) {
		b := NewBackoff(p)
		b.Next("a", at(0), at(0))
		b.Next("a", at(0), at(0))
		if b.Get("b") != 0 || b.IsInBackOffSince("b", at(0), at(0)) {
			t.Error("B12: keys must not share back-off")
		}
	})
	t.Run("B1 initial above max is lowered to max", func(t *testing.T) {
		b := NewBackoff(spec.Backoff{Initial: 10 * time.Second, Max: 3 * time.Second, Reset: time.Minute})
		b.Next("x", at(0), at(0))
		if b.Get("x") != 3*time.Second {
			t.Errorf("B1: got %s, want 3s", b.Get("x"))
		}
	})
	t.Run("B14 no jitter", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			b := NewBackoff(p)
			b.Next("x", at(0), at(0))
			b.Next("x", at(0), at(0))
			if b.Get("x") != 20*time.Second {
				t.Fatalf("B14: back-off varies: %s", b.Get("x"))
			}
		}
	})
}

func TestGraceArithmetic(t *testing.T) {
	d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	dp := func(s float64) *time.Duration { v := d(s); return &v }
	cases := []struct {
		rule     string
		reason   lifecycle.KillReason
		group    time.Duration
		probe    *time.Duration
		override *time.Duration
		preStop  time.Duration
		min      time.Duration
		want     time.Duration
	}{
		{"K1.3 group grace", lifecycle.KillStop, d(30), nil, nil, 0, d(2), d(30)},
		{"K1.2 probe grace when the kill is that probe's", lifecycle.KillLiveness, d(30), dp(5), nil, 0, d(2), d(5)},
		{"K1.2 startup probe grace", lifecycle.KillStartup, d(30), dp(7), nil, 0, d(2), d(7)},
		{"K1.2 probe grace ignored for other reasons", lifecycle.KillStop, d(30), dp(5), nil, 0, d(2), d(30)},
		{"K1.2 unset probe grace falls back to group", lifecycle.KillLiveness, d(30), nil, nil, 0, d(2), d(30)},
		{"K2 override wins over probe grace", lifecycle.KillLiveness, d(30), dp(5), dp(12), 0, d(2), d(12)},
		{"K2 override wins over group grace", lifecycle.KillShutdown, d(30), nil, dp(3), 0, d(2), d(3)},
		{"K3 pre_stop 25.9s charges 25s (K8)", lifecycle.KillStop, d(30), nil, nil, d(25.9), d(2), d(5)},
		{"K3 pre_stop 0.999s charges nothing", lifecycle.KillStop, d(30), nil, nil, d(0.999), d(2), d(30)},
		{"K3+K5 pre_stop eating the grace leaves the minimum (K8)", lifecycle.KillStop, d(30), nil, nil, d(30), d(2), d(2)},
		{"K5 override 0 still waits the minimum (K8)", lifecycle.KillStop, d(30), nil, dp(0), 0, d(2), d(2)},
		{"X12 minimum settable lower", lifecycle.KillStop, d(30), nil, dp(0), 0, d(0.1), d(0.1)},
		{"K5 applies after K3 (charge beyond grace)", lifecycle.KillStop, d(3), nil, nil, d(10), d(2), d(2)},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			g := SelectGrace(c.reason, c.group, c.probe, c.override)
			g = MinimumGrace(ChargePreStop(g, c.preStop), c.min)
			if g != c.want {
				t.Errorf("%s: got %s, want %s", c.rule, g, c.want)
			}
		})
	}
}
