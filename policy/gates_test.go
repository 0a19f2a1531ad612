package policy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// nodes returns n nodes named node-0 ... node-(n-1); the first u are
// unresponsive.
func nodes(n, u int) []Node {
	ns := make([]Node, n)
	for i := range ns {
		ns[i] = Node{Name: fmt.Sprintf("node-%d", i), Unresponsive: i < u}
	}
	return ns
}

// with applies f to a copy of ns.
func with(ns []Node, f func([]Node)) []Node {
	ns = append([]Node(nil), ns...)
	f(ns)
	return ns
}

// candidate is node-0 about to be isolated.
var candidate = Candidate{Node: Node{Name: "node-0", Unresponsive: true}, Step: "isolation"}

func TestStormGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		guard   *StormGuard
		cand    Candidate
		nodes   []Node
		now     time.Time
		want    string // "admitted" or the refusal's String
		wantTry time.Duration
	}{
		{name: "at the percent bound", guard: &StormGuard{MaxUnresponsivePercent: 30},
			nodes: nodes(20, 6), want: "admitted"},
		{name: "over the percent bound", guard: &StormGuard{MaxUnresponsivePercent: 30},
			nodes: nodes(20, 7),
			want:  "refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%"},
		{name: "over the percent bound, with a cooldown", guard: &StormGuard{MaxUnresponsivePercent: 30, Cooldown: 10 * time.Minute},
			nodes: nodes(20, 7), wantTry: 10 * time.Minute,
			want: "refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%; fencing resumes 10m0s after the storm ends"},
		{name: "half is not over 50%", guard: &StormGuard{MaxUnresponsivePercent: 50},
			nodes: nodes(2, 1), want: "admitted"},
		{name: "the candidate counts even when its entry says responsive", guard: &StormGuard{MaxUnresponsivePercent: 30},
			nodes: with(nodes(20, 7), func(ns []Node) { ns[0].Unresponsive = false }),
			want:  "refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%"},
		{name: "a candidate missing from the view counts as one more node", guard: &StormGuard{MaxUnresponsivePercent: 30},
			cand: Candidate{Node: Node{Name: "node-x"}}, nodes: nodes(19, 6),
			want: "refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%"},
		{name: "unresponsive nodes being fenced count", guard: &StormGuard{MaxUnresponsivePercent: 30},
			nodes: with(nodes(20, 7), func(ns []Node) { ns[1].Fencing, ns[2].Fencing = true, true }),
			want:  "refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limit of 30%"},
		{name: "responsive nodes being fenced do not", guard: &StormGuard{MaxUnresponsivePercent: 30},
			nodes: with(nodes(20, 6), func(ns []Node) { ns[10].Fencing, ns[11].Fencing = true, true }),
			want:  "admitted"},
		{name: "at the count bound", guard: &StormGuard{MaxUnresponsive: 5},
			nodes: nodes(100, 5), want: "admitted"},
		{name: "over the count bound", guard: &StormGuard{MaxUnresponsive: 5},
			nodes: nodes(100, 6),
			want:  "refused by storm-guard: 6 of 100 nodes unresponsive (6%), over the limit of 5 nodes"},
		{name: "over the count bound only", guard: &StormGuard{MaxUnresponsivePercent: 50, MaxUnresponsive: 5},
			nodes: nodes(1000, 6),
			want:  "refused by storm-guard: 6 of 1000 nodes unresponsive (0.6%), over the limit of 5 nodes"},
		{name: "over both bounds", guard: &StormGuard{MaxUnresponsivePercent: 30, MaxUnresponsive: 5},
			nodes: nodes(20, 7),
			want:  "refused by storm-guard: 7 of 20 nodes unresponsive (35%), over the limits of 30% and 5 nodes"},
		{name: "both bounds off", guard: &StormGuard{Cooldown: time.Hour},
			nodes: nodes(20, 20), want: "admitted"},
		{name: "a share shown with the digits that put it over the limit", guard: &StormGuard{MaxUnresponsivePercent: 33.31},
			nodes: nodes(3, 1),
			want:  "refused by storm-guard: 1 of 3 nodes unresponsive (33.33%), over the limit of 33.31%"},
		{name: "a fractional limit", guard: &StormGuard{MaxUnresponsivePercent: 12.5},
			nodes: nodes(8, 2),
			want:  "refused by storm-guard: 2 of 8 nodes unresponsive (25%), over the limit of 12.5%"},
		{name: "an empty view", guard: &StormGuard{MaxUnresponsivePercent: 50},
			want: "refused by storm-guard: the cluster view has no nodes, so the share of unresponsive nodes is unknown"},
		{name: "an empty view with both bounds off", guard: &StormGuard{},
			want: "refused by storm-guard: the cluster view has no nodes, so the share of unresponsive nodes is unknown"},
		{name: "no time, with a cooldown", guard: &StormGuard{MaxUnresponsivePercent: 50, Cooldown: time.Minute},
			nodes: nodes(10, 1), now: time.Time{},
			want: "refused by storm-guard: the cluster view has no time (Cluster.Now is zero), so the cooldown cannot be measured"},
		{name: "no time, no cooldown", guard: &StormGuard{MaxUnresponsivePercent: 50},
			nodes: nodes(10, 1), now: time.Time{}, want: "admitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cand
			if c.Node.Name == "" {
				c = candidate
			}
			now := tc.now
			if now.IsZero() && !strings.HasPrefix(tc.name, "no time") {
				now = t0
			}
			d := tc.guard.Admit(context.Background(), c, Cluster{Now: now, Nodes: tc.nodes})
			assert.Equal(t, tc.want, d.String())
			assert.Equal(t, tc.wantTry, d.RetryAfter)
			if !d.Admit {
				assert.Equal(t, GateStormGuard, d.Gate)
			}
		})
	}
}

// A storm, its end, the cooldown and what comes after, pass by pass on a
// fake time: the cooldown runs from the last pass that saw the storm.
func TestStormGuardCooldown(t *testing.T) {
	g := &StormGuard{MaxUnresponsivePercent: 50, Cooldown: 10 * time.Minute}
	at := func(h, m, s int) time.Time { return time.Date(2024, 5, 1, h, m, s, 0, time.UTC) }
	storm, calm := nodes(10, 6), nodes(10, 1)
	for _, p := range []struct {
		now     time.Time
		nodes   []Node
		want    string
		wantTry time.Duration
	}{
		{at(12, 0, 0), calm, "admitted", 0},
		{at(12, 1, 0), storm, "refused by storm-guard: 6 of 10 nodes unresponsive (60%), over the limit of 50%; fencing resumes 10m0s after the storm ends", 10 * time.Minute},
		{at(12, 3, 0), storm, "refused by storm-guard: 6 of 10 nodes unresponsive (60%), over the limit of 50%; fencing resumes 10m0s after the storm ends", 10 * time.Minute},
		{at(12, 4, 0), calm, "refused by storm-guard: storm last seen at 12:03:00 (6 of 10 nodes unresponsive), cooling down until 12:13:00; now 1 of 10 nodes unresponsive", 9 * time.Minute},
		// A view older than the storm (out of order) is in the cooldown.
		{at(12, 2, 0), calm, "refused by storm-guard: storm last seen at 12:03:00 (6 of 10 nodes unresponsive), cooling down until 12:13:00; now 1 of 10 nodes unresponsive", 11 * time.Minute},
		// An older storm does not move the last one back.
		{at(12, 2, 30), storm, "refused by storm-guard: 6 of 10 nodes unresponsive (60%), over the limit of 50%; fencing resumes 10m0s after the storm ends", 10 * time.Minute},
		{at(12, 12, 59), calm, "refused by storm-guard: storm last seen at 12:03:00 (6 of 10 nodes unresponsive), cooling down until 12:13:00; now 1 of 10 nodes unresponsive", time.Second},
		{at(12, 13, 0), calm, "admitted", 0},
		{at(13, 0, 0), calm, "admitted", 0},
		// A second storm starts a new cooldown.
		{at(13, 1, 0), nodes(10, 8), "refused by storm-guard: 8 of 10 nodes unresponsive (80%), over the limit of 50%; fencing resumes 10m0s after the storm ends", 10 * time.Minute},
		{at(13, 1, 1), calm, "refused by storm-guard: storm last seen at 13:01:00 (8 of 10 nodes unresponsive), cooling down until 13:11:00; now 1 of 10 nodes unresponsive", 10*time.Minute - time.Second},
		{at(13, 11, 0), calm, "admitted", 0},
	} {
		d := g.Admit(context.Background(), candidate, Cluster{Now: p.now, Nodes: p.nodes})
		assert.Equal(t, p.want, d.String(), "at %s", p.now.Format(time.TimeOnly))
		assert.Equal(t, p.wantTry, d.RetryAfter, "at %s", p.now.Format(time.TimeOnly))
	}
	assert.Equal(t, at(13, 1, 0), g.LastStorm())
}

func TestStormGuardRecordStorm(t *testing.T) {
	g := &StormGuard{MaxUnresponsivePercent: 50, Cooldown: 10 * time.Minute}
	assert.True(t, g.LastStorm().IsZero())
	last := time.Date(2024, 5, 1, 23, 58, 0, 0, time.UTC)
	g.RecordStorm(last)
	g.RecordStorm(last.Add(-time.Hour)) // older: ignored
	assert.Equal(t, last, g.LastStorm())

	// Restored after a restart: no counts to tell, and the date shows when
	// the storm was on another day.
	d := g.Admit(context.Background(), candidate, Cluster{Now: last.Add(3 * time.Minute), Nodes: nodes(10, 1)})
	assert.Equal(t, "refused by storm-guard: storm last seen at 2024-05-01 23:58:00, cooling down until 2024-05-02 00:08:00; now 1 of 10 nodes unresponsive", d.String())
	assert.Equal(t, 7*time.Minute, d.RetryAfter)

	// Times are shown in the location of Cluster.Now.
	east := time.FixedZone("UTC+2", 2*3600)
	d = g.Admit(context.Background(), candidate, Cluster{Now: last.Add(5 * time.Minute).In(east), Nodes: nodes(10, 1)})
	assert.Equal(t, "refused by storm-guard: storm last seen at 01:58:00, cooling down until 02:08:00; now 1 of 10 nodes unresponsive", d.String())

	d = g.Admit(context.Background(), candidate, Cluster{Now: last.Add(10 * time.Minute), Nodes: nodes(10, 1)})
	assert.True(t, d.Admit)
}

func TestMaxInFlight(t *testing.T) {
	fencing := func(names ...int) []Node {
		return with(nodes(10, 0), func(ns []Node) {
			for _, i := range names {
				ns[i].Fencing = true
			}
		})
	}
	for _, tc := range []struct {
		name  string
		n     int
		nodes []Node
		want  string
	}{
		{"none in flight", 1, fencing(), "admitted"},
		{"the candidate itself is not counted", 1, fencing(0), "admitted"},
		{"one in flight, limit 1", 1, fencing(3), "refused by max-in-flight: 1 fencing in flight (node-3), at the limit of 1"},
		{"one in flight, limit 2", 2, fencing(0, 3), "admitted"},
		{"two in flight, limit 2", 2, fencing(0, 3, 5), "refused by max-in-flight: 2 fencings in flight (node-3, node-5), at the limit of 2"},
		{"over the limit, names cut short", 2, fencing(1, 2, 3, 4, 5, 6), "refused by max-in-flight: 6 fencings in flight (node-1, node-2, node-3 and 3 more), over the limit of 2"},
		{"limit 0", 0, fencing(), "refused by max-in-flight: the limit of fencings in flight is 0, so no fencing may start"},
		{"negative limit", -1, fencing(), "refused by max-in-flight: the limit of fencings in flight is -1, so no fencing may start"},
		{"empty view", 1, nil, "admitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := MaxInFlight{N: tc.n}.Admit(context.Background(), candidate, Cluster{Now: t0, Nodes: tc.nodes})
			assert.Equal(t, tc.want, d.String())
			assert.Zero(t, d.RetryAfter)
		})
	}
}

func TestOneControlPlane(t *testing.T) {
	cp := func(f func([]Node)) []Node {
		return with(nodes(6, 0), func(ns []Node) {
			ns[0].ControlPlane, ns[1].ControlPlane, ns[2].ControlPlane = true, true, true
			f(ns)
		})
	}
	worker := Candidate{Node: Node{Name: "node-4"}, Step: "isolation"}
	for _, tc := range []struct {
		name  string
		cand  Candidate
		nodes []Node
		want  string
	}{
		{"control-plane candidate, none fencing", candidate, cp(func([]Node) {}), "admitted"},
		{"control-plane candidate, itself fencing", candidate, cp(func(ns []Node) { ns[0].Fencing = true }), "admitted"},
		{"control-plane candidate, a worker fencing", candidate, cp(func(ns []Node) { ns[3].Fencing = true }), "admitted"},
		{"control-plane candidate, another control-plane node fencing", candidate, cp(func(ns []Node) { ns[2].Fencing = true }),
			"refused by control-plane: control-plane node node-2 is being fenced; one control-plane node at a time"},
		{"control-plane candidate, two others fencing", candidate, cp(func(ns []Node) { ns[1].Fencing, ns[2].Fencing = true, true }),
			"refused by control-plane: control-plane nodes node-1, node-2 are being fenced; one control-plane node at a time"},
		{"control-plane by its entry only", Candidate{Node: Node{Name: "node-0"}}, cp(func(ns []Node) { ns[2].Fencing = true }),
			"refused by control-plane: control-plane node node-2 is being fenced; one control-plane node at a time"},
		{"control-plane by the candidate only", Candidate{Node: Node{Name: "node-5", ControlPlane: true}}, cp(func(ns []Node) { ns[2].Fencing = true }),
			"refused by control-plane: control-plane node node-2 is being fenced; one control-plane node at a time"},
		{"worker candidate, a control-plane node fencing", worker, cp(func(ns []Node) { ns[2].Fencing = true }), "admitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := OneControlPlane{}.Admit(context.Background(), tc.cand, Cluster{Now: t0, Nodes: tc.nodes})
			assert.Equal(t, tc.want, d.String())
		})
	}
}

// recorder is a gate that notes that it was asked and answers d.
type recorder struct {
	name  string
	d     Decision
	mu    *sync.Mutex
	asked *[]string
}

func (r recorder) Admit(context.Context, Candidate, Cluster) Decision {
	r.mu.Lock()
	*r.asked = append(*r.asked, r.name)
	r.mu.Unlock()
	return r.d
}

func TestAll(t *testing.T) {
	refuse := func(gate string) Decision { return Refuse(gate, "no") }
	for _, tc := range []struct {
		name      string
		decisions []Decision
		want      string
		wantAsked string
	}{
		{"no gates", nil, "admitted", ""},
		{"every gate admits", []Decision{Admitted(), Admitted(), Admitted()}, "admitted", "a b c"},
		{"the first refusal wins, later gates not asked", []Decision{Admitted(), refuse("second"), refuse("third")}, "refused by second: no", "a b"},
		{"the first gate refuses", []Decision{refuse("first"), Admitted()}, "refused by first: no", "a"},
		{"the last gate refuses", []Decision{Admitted(), Admitted(), refuse("third")}, "refused by third: no", "a b c"},
		{"an unnamed refusal is named by its place", []Decision{Admitted(), {}}, "refused by gate 2: no reason given", "a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			var gs []Gate
			for i, d := range tc.decisions {
				gs = append(gs, recorder{name: string(rune('a' + i)), d: d, mu: &mu, asked: &asked})
			}
			d := All(gs...).Admit(context.Background(), candidate, Cluster{Now: t0, Nodes: nodes(3, 1)})
			assert.Equal(t, tc.want, d.String())
			assert.Equal(t, tc.wantAsked, strings.Join(asked, " "))
		})
	}

	t.Run("a refusal keeps its retry hint", func(t *testing.T) {
		d := All(GateFunc(func(context.Context, Candidate, Cluster) Decision {
			return Decision{Gate: "x", Reason: "wait", RetryAfter: time.Minute}
		})).Admit(context.Background(), candidate, Cluster{})
		assert.Equal(t, Decision{Gate: "x", Reason: "wait", RetryAfter: time.Minute}, d)
	})
	t.Run("the context reaches the gates", func(t *testing.T) {
		type key struct{}
		ctx := context.WithValue(context.Background(), key{}, "v")
		var got any
		All(GateFunc(func(ctx context.Context, _ Candidate, _ Cluster) Decision {
			got = ctx.Value(key{})
			return Admitted()
		})).Admit(ctx, candidate, Cluster{})
		assert.Equal(t, "v", got)
	})
	t.Run("a nil gate panics at once", func(t *testing.T) {
		assert.PanicsWithValue(t, "policy.All: gate 2 of 2 is nil", func() { All(OneControlPlane{}, nil) })
	})
}

// The order of Default's gates: the storm guard first (it must see every
// pass), then max-in-flight, then control-plane.
func TestDefaultOrder(t *testing.T) {
	cl := func(f func([]Node)) Cluster {
		ns := nodes(10, 1)
		ns[0].ControlPlane, ns[1].ControlPlane = true, true
		f(ns)
		return Cluster{Now: t0, Nodes: ns}
	}
	g := Default()
	// Storm and a control-plane node fencing: the storm is what the user
	// sees.
	d := g.Admit(context.Background(), candidate, cl(func(ns []Node) {
		for i := range 6 {
			ns[i].Unresponsive = true
		}
		ns[1].Fencing = true
	}))
	assert.Equal(t, GateStormGuard, d.Gate)
	// No storm (but the cooldown of the one above): still the storm guard.
	d = g.Admit(context.Background(), candidate, cl(func(ns []Node) { ns[1].Fencing = true }))
	assert.Equal(t, GateStormGuard, d.Gate)
	assert.Contains(t, d.Reason, "cooling down until 12:05:00")

	g = Default()
	d = g.Admit(context.Background(), candidate, cl(func(ns []Node) { ns[1].Fencing = true }))
	assert.Equal(t, "refused by max-in-flight: 1 fencing in flight (node-1), at the limit of 1", d.String())
	d = g.Admit(context.Background(), candidate, cl(func([]Node) {}))
	assert.True(t, d.Admit)

	// control-plane is reached when max-in-flight admits.
	g, err := Config{OneControlPlane: true, MaxInFlight: 3}.Gate()
	require.NoError(t, err)
	d = g.Admit(context.Background(), candidate, cl(func(ns []Node) { ns[1].Fencing = true }))
	assert.Equal(t, "refused by control-plane: control-plane node node-1 is being fenced; one control-plane node at a time", d.String())
}

func TestLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	g := Logged(&StormGuard{MaxUnresponsivePercent: 50, Cooldown: time.Minute}, log)
	d := g.Admit(context.Background(), candidate, Cluster{Now: t0, Nodes: nodes(4, 1)})
	assert.True(t, d.Admit)
	d = g.Admit(context.Background(), candidate, Cluster{Now: t0, Nodes: nodes(4, 3)})
	assert.False(t, d.Admit)
	assert.Equal(t, `level=DEBUG msg="fencing admitted" node=node-0 step=isolation
level=INFO msg="fencing refused" node=node-0 step=isolation gate=storm-guard reason="3 of 4 nodes unresponsive (75%), over the limit of 50%; fencing resumes 1m0s after the storm ends" retryAfter=1m0s
`, buf.String())

	// A nil logger discards.
	d = Logged(MaxInFlight{N: 0}, nil).Admit(context.Background(), candidate, Cluster{})
	assert.False(t, d.Admit)
	assert.Panics(t, func() { Logged(nil, nil) })
}

// Many goroutines share one Default gate, as the workers of a controller
// do; run with -race. The storm guard ends up remembering the latest storm
// any of them saw.
func TestConcurrentUse(t *testing.T) {
	g := Default()
	storm, calm := nodes(10, 6), nodes(10, 1)
	const workers, passes = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range passes {
				ns := calm
				if (i+w)%7 == 0 {
					ns = storm
				}
				now := t0.Add(time.Duration(w*passes+i) * time.Second)
				d := g.Admit(context.Background(), candidate, Cluster{Now: now, Nodes: ns})
				if ns[5].Unresponsive && d.Admit {
					t.Errorf("admitted during a storm at %s", now)
				}
			}
		})
	}
	wg.Wait()
	// The last storm: the worker with the latest times (w = 7) at its last
	// i with (i+7)%7 == 0, that is i = 497.
	want := t0.Add(time.Duration(7*passes+497) * time.Second)
	sg := g.(all)[0].(*StormGuard)
	assert.Equal(t, want, sg.LastStorm())
}

// All speaks for the storm memory of its gates, nested ones included.
func TestAllStormMemory(t *testing.T) {
	sg := &StormGuard{MaxUnresponsivePercent: 50, Cooldown: time.Minute}
	g := All(MaxInFlight{N: 1}, All(sg))
	m, ok := g.(StormMemory)
	if !ok {
		t.Fatal("All is no StormMemory")
	}
	if !m.LastStorm().IsZero() {
		t.Fatalf("LastStorm %v before any storm", m.LastStorm())
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m.RecordStorm(at)
	if !sg.LastStorm().Equal(at) || !m.LastStorm().Equal(at) {
		t.Fatalf("recorded %v: guard %v, All %v", at, sg.LastStorm(), m.LastStorm())
	}
	m.RecordStorm(at.Add(-time.Hour))
	if !m.LastStorm().Equal(at) {
		t.Fatalf("an older storm replaced the last: %v", m.LastStorm())
	}
	var _ StormMemory = sg

	// A logged gate keeps it too.
	lg, ok := Logged(g, nil).(StormMemory)
	if !ok {
		t.Fatal("a logged gate is no StormMemory")
	}
	lg.RecordStorm(at.Add(time.Minute))
	if !sg.LastStorm().Equal(at.Add(time.Minute)) || !lg.LastStorm().Equal(at.Add(time.Minute)) {
		t.Fatalf("through Logged: guard %v, logged %v", sg.LastStorm(), lg.LastStorm())
	}
}
