package core

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// TestRestTableIsComplete enumerates the between-instances table: every
// (state, event) cell leads to a state or is explicitly impossible, every
// state is reached, and fireRest does what each cell says (an impossible
// cell changes nothing and reports an InternalError).
func TestRestTableIsComplete(t *testing.T) {
	reached := map[rest]bool{restPolicy: true}
	for r := rest(0); r < numRests; r++ {
		for ev := restEvent(0); ev < numRestEvents; ev++ {
			c := restTable[r][ev]
			if !c.impossible && c.to >= numRests {
				t.Errorf("(%s, %s) leads to %s, which is no state", r, ev, c.to)
			}
			if !c.impossible && c.to != r {
				reached[c.to] = true
			}

			g := NewGroup(Config{Group: spec.Group{Name: "g", Processes: []spec.Process{{Name: "app", Command: []string{"x"}}}}, Backoff: spec.DefaultBackoff()})
			g.now, g.out = time.Unix(1000, 0), &Plan{}
			p := g.mains[0]
			p.rest = r
			if r == restProbeKilled {
				p.b8 = &b8Check{}
			}
			g.fireRest(p, ev)
			internal := false
			for _, a := range g.out.Actions {
				if e, ok := a.(EmitAction); ok && e.Event.Reason == lifecycle.EventInternalError {
					internal = true
				}
			}
			switch {
			case c.impossible && (!internal || p.rest != r):
				t.Errorf("impossible (%s, %s): InternalError %v, state %s", r, ev, internal, p.rest)
			case !c.impossible && (internal || p.rest != c.to):
				t.Errorf("(%s, %s) led to %s (InternalError %v), the table says %s", r, ev, p.rest, internal, c.to)
			case !c.impossible && (p.b8 != nil) != (p.rest == restProbeKilled && r == restProbeKilled):
				t.Errorf("(%s, %s): B8's reference outlives or precedes ProbeKilled", r, ev)
			}
		}
	}
	for r := rest(0); r < numRests; r++ {
		if !reached[r] {
			t.Errorf("no event leads to %s", r)
		}
	}
	// Birth always starts from a clean slate: whatever was owed is spent.
	for r := rest(0); r < numRests; r++ {
		if c := restTable[r][restOnBirth]; c.impossible || c.to != restPolicy {
			t.Errorf("(%s, birth) must lead to Policy", r)
		}
	}
}
