package reboot

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// request is one client's reboot request, followed through a simulation.
type request struct {
	annotation string
	step       int  // when it was made
	seen       bool // a decision was made with it present
	served     bool // the host was off after a decision saw it
	cancelled  bool // removed by deprovisioning
}

// world is a host, its clients and the controller, driven by random events.
type world struct {
	t     *testing.T
	r     *rand.Rand
	h     *host
	open  map[string][]*request // the requests behind each annotation present
	all   []*request
	step  int
	fail  int  // the next power operations that fail
	acts  bool // ... and whether they act anyway (outcome unknown)
	log   []string
	stats *propertyStats
}

type propertyStats struct {
	decisions, reboots, powerOns, heldOff, failures, served, cancelled, flaps int
}

var propertyValues = []string{
	"", "", `{"mode":"hard"}`, `{"mode":"soft"}`, `{'mode':'hard'}`, `{"force":true}`,
	`{"mode":"hard","force":true}`, "7f9c1a2e-0b1d-4c1e-9a53-1b2c3d4e5f60", `{"mode":`, `{"mode":"HARD"}`,
}

var propertyKeys = []string{KeyedAnnotation("a"), KeyedAnnotation("b"), KeyedAnnotation("c")}

func newWorld(t *testing.T, r *rand.Rand, stats *propertyStats) *world {
	w := &world{t: t, r: r, h: newHost(), open: map[string][]*request{}, stats: stats}
	if r.IntN(2) == 0 {
		w.h.precision = time.Second
	}
	w.h.power = func(d Decision) (bool, error) {
		if w.fail > 0 {
			w.fail--
			w.stats.failures++
			if w.acts {
				return d.PowerOn, fence.OutcomeUnknown(errors.New("simulated timeout"))
			}
			return w.h.on, fence.NotDone(errors.New("simulated refusal"))
		}
		return d.PowerOn, nil
	}
	return w
}

func (w *world) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("%4d ", w.step)+fmt.Sprintf(format, args...))
}

func (w *world) fatalf(format string, args ...any) {
	w.t.Helper()
	tail := w.log[max(0, len(w.log)-40):]
	w.t.Fatalf("step %d: %s\nlast events:\n%s", w.step, fmt.Sprintf(format, args...), strings.Join(tail, "\n"))
}

// annotate is a client setting an annotation: a new request.
func (w *world) annotate(k, v string) {
	w.h.ann[k] = v
	req := &request{annotation: k, step: w.step}
	w.open[k] = append(w.open[k], req)
	w.all = append(w.all, req)
	w.logf("annotate %s %s", k, v)
}

// removed closes the requests behind an annotation that was removed.
func (w *world) removed(k string, byDeprovisioning bool) {
	for _, req := range w.open[k] {
		switch {
		case req.served:
		case byDeprovisioning:
			req.cancelled = true
		default:
			w.fatalf("%s removed before its request (step %d) was served", k, req.step)
		}
	}
	delete(w.open, k)
}

// observe marks as served the requests a decision has seen, if the host is
// off.
func (w *world) observe() {
	if w.h.on {
		return
	}
	for _, reqs := range w.open {
		for _, req := range reqs {
			if req.seen {
				req.served = true
			}
		}
	}
}

func (w *world) reconcile() Decision {
	h := w.h
	in := h.input()
	d := Decide(in)
	w.stats.decisions++
	if d2 := Decide(in); !reflect.DeepEqual(d, d2) {
		w.fatalf("Decide is not deterministic:\n%s\n%s", d, d2)
	}
	w.check(in, d)
	for _, reqs := range w.open {
		for _, req := range reqs {
			req.seen = true
		}
	}
	err := h.apply(d)
	w.logf("decide %s (err %v) -> on=%v", d, err, h.on)
	w.observe()
	for _, k := range d.RemoveAnnotations {
		w.removed(k, in.Provisioning == Deprovisioning)
	}
	switch d.Reason {
	case ReasonRebootRequested:
		w.stats.reboots++
	case ReasonHeldOff:
		w.stats.heldOff++
	}
	if d.PowerOn && err == nil {
		w.stats.powerOns++
	}
	return d
}

// check checks the safety rules of one decision.
func (w *world) check(in Input, d Decision) {
	keyed := 0
	for k := range in.Annotations {
		if strings.HasPrefix(k, KeyedAnnotationPrefix) {
			keyed++
		}
	}
	switch {
	case d.PowerOn && keyed > 0:
		w.fatalf("powers on with %d keyed annotations: %s", keyed, d)
	case d.PowerOn && d.PowerOff:
		w.fatalf("powers on and off: %s", d)
	case d.PowerOn && len(d.RemoveAnnotations) > 0:
		w.fatalf("removes annotations and powers on in one step: %s", d)
	case in.Provisioning == Deprovisioning && (d.PowerOn || d.PowerOff):
		w.fatalf("power operation while deprovisioning: %s", d)
	case d.SetPendingRebootSince && !d.PendingRebootSince.IsZero() && !d.PendingRebootSince.After(in.LastPoweredOn):
		w.fatalf("pendingRebootSince %v not after lastPoweredOn %v: the reboot would not be pending", d.PendingRebootSince, in.LastPoweredOn)
	case d.SetLastPoweredOn && d.LastPoweredOn.Before(in.PendingRebootSince):
		w.fatalf("lastPoweredOn %v before pendingRebootSince %v: the reboot would not end", d.LastPoweredOn, in.PendingRebootSince)
	case in.Provisioning != Deprovisioning && in.PoweredOn && in.PendingRebootSince.After(in.LastPoweredOn) && !d.PowerOff:
		w.fatalf("a reboot is pending and the host is on, but no power off: %s", d)
	}
	for _, k := range d.RemoveAnnotations {
		if k != Annotation && in.Provisioning != Deprovisioning {
			w.fatalf("removes the keyed annotation %s: %s", k, d)
		}
	}
	if d.PowerOff {
		// The mode, recomputed from ParseAnnotations.
		reqs, _ := ParseAnnotations(in.Annotations)
		want := Soft
		for _, r := range reqs {
			if r.Mode == Hard && (in.Provisioning == Provisioned || in.Force || r.Force) {
				want = Hard
			}
		}
		if in.LastPowerFailed {
			want = Hard
		}
		if d.Mode != want {
			w.fatalf("mode %v, want %v: %s", d.Mode, want, d)
		}
	}
}

// event applies one random event.
func (w *world) event() {
	h, r := w.h, w.r
	switch n := r.IntN(100); {
	case n < 35:
		w.reconcile()
	case n < 45: // a keyed client asks, if it has no request open
		k := propertyKeys[r.IntN(len(propertyKeys))]
		if _, ok := h.ann[k]; !ok {
			w.annotate(k, propertyValues[r.IntN(len(propertyValues))])
		}
	case n < 55: // a keyed client whose request was served lets the host go
		k := propertyKeys[r.IntN(len(propertyKeys))]
		if reqs, ok := w.open[k]; ok && reqs[0].served {
			delete(h.ann, k)
			w.removed(k, false)
			w.logf("remove %s", k)
		}
	case n < 61: // a plain request (a second one while one is open merges)
		w.annotate(Annotation, propertyValues[r.IntN(len(propertyValues))])
	case n < 66:
		h.online = !h.online
		w.logf("online=%v", h.online)
	case n < 70:
		h.on = !h.on
		w.stats.flaps++
		w.logf("flap on=%v", h.on)
		w.observe()
	case n < 82:
		d := []time.Duration{0, 100 * time.Millisecond, 400 * time.Millisecond, time.Second, 7 * time.Second, time.Minute, -3 * time.Second}[r.IntN(7)]
		h.now = h.now.Add(d)
	case n < 85:
		h.prov = Provisioning(r.IntN(3))
		w.logf("provisioning=%v", h.prov)
	case n < 87:
		h.force = !h.force
		w.logf("force=%v", h.force)
	default:
		w.fail, w.acts = 1+r.IntN(2), r.IntN(2) == 0
		w.logf("next %d power operations fail (acting: %v)", w.fail, w.acts)
	}
}

// settle lets the world calm down: no more requests, faults or flaps, the
// host provisioned and online, clients letting go once served. It returns
// whether everything settled.
func (w *world) settle() bool {
	h := w.h
	w.fail = 0
	h.prov, h.online = Provisioned, true
	w.logf("settling")
	for range 100 {
		w.step++
		quiet := len(h.ann) == 0
		d := w.reconcile()
		for _, k := range propertyKeys {
			if reqs, ok := w.open[k]; ok && reqs[0].served {
				delete(h.ann, k)
				w.removed(k, false)
				w.logf("remove %s", k)
			}
		}
		h.now = h.now.Add(time.Second)
		if d.Nothing() && quiet {
			return true
		}
	}
	return false
}

// Over random sequences of events (clients adding and removing annotations,
// Spec.Online changing, the host flapping, power operations failing, the
// provisioning state changing, the clock moving, also back), the host is
// never powered on while a keyed annotation exists, and every reboot request
// is eventually served: the host is off after the controller has seen it
// (or the request was cancelled by deprovisioning).
func TestPropertyKeyedHoldsAndEveryRequestIsServed(t *testing.T) {
	const sequences, steps = 300, 300
	var stats propertyStats
	for seq := range sequences {
		r := rand.New(rand.NewPCG(uint64(seq), 0x5eed))
		w := newWorld(t, r, &stats)
		for w.step = 0; w.step < steps; w.step++ {
			w.event()
		}
		if !w.settle() {
			w.fatalf("sequence %d did not settle: %s", seq, Decide(w.h.input()))
		}
		for _, req := range w.all {
			if !req.served && !req.cancelled {
				w.fatalf("sequence %d: the request on %s of step %d was never served", seq, req.annotation, req.step)
			}
			if req.served {
				stats.served++
			} else {
				stats.cancelled++
			}
		}
		if !w.h.on || w.h.pending.After(w.h.last) {
			w.fatalf("sequence %d: settled with the host on=%v, pending %v, last %v", seq, w.h.on, w.h.pending, w.h.last)
		}
	}
	t.Logf("%+v", stats)
	// The property is not vacuous: the events did exercise the machine.
	for name, n := range map[string]int{"reboots": stats.reboots, "power-ons": stats.powerOns, "held-off": stats.heldOff,
		"failures": stats.failures, "served": stats.served, "cancelled": stats.cancelled, "flaps": stats.flaps} {
		if n < sequences {
			t.Errorf("only %d %s over %d sequences", n, name, sequences)
		}
	}
}
