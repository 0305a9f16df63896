package pid1

import (
	"slices"
	"testing"
)

func TestAsyncPreemptOffReadsGODEBUGAsTheRuntime(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                                    false,
		"asyncpreemptoff=1":                   true,
		"asyncpreemptoff=0":                   false,
		"asyncpreemptoff=2":                   true,
		"gctrace=1,asyncpreemptoff=1":         true,
		"asyncpreemptoff=1,asyncpreemptoff=0": false, // the last one wins
		"asyncpreemptoff=x":                   false, // not a number: ignored
		"xasyncpreemptoff=1":                  false,
	} {
		if got := asyncPreemptOff(godebug); got != want {
			t.Errorf("asyncPreemptOff(%q) = %v, want %v", godebug, got, want)
		}
	}
}

func TestPreparedEnvironKeepsTheOriginalGODEBUG(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want []string
	}{
		{[]string{"A=1"}, []string{"A=1", "GODEBUG=asyncpreemptoff=1", preparedEnv + "="}},
		{[]string{"GODEBUG=", "A=1"}, []string{"A=1", "GODEBUG=asyncpreemptoff=1", preparedEnv + "=="}},
		{[]string{"GODEBUG=gctrace=1"}, []string{"GODEBUG=gctrace=1,asyncpreemptoff=1", preparedEnv + "==gctrace=1"}},
	} {
		if got := preparedEnviron(c.env); !slices.Equal(got, c.want) {
			t.Errorf("preparedEnviron(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}
