package reboot

import "time"

// t0 is the start of every test's clock.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// at returns t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// ann builds an annotation map from key, value pairs.
func ann(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// host is a simulated host with its object (annotations, spec, status) and
// a controller that applies decisions to it as the Decision documentation
// says.
type host struct {
	ann       map[string]string
	on        bool // the host's real power
	online    bool
	prov      Provisioning
	pending   time.Time
	last      time.Time
	failed    bool
	force     bool
	now       time.Time
	precision time.Duration

	// power carries out a decision's power operation and returns the
	// host's power afterwards; nil switches at once.
	power func(d Decision) (on bool, err error)
	// read, if set, reads the host's power before each decision.
	read func() bool
}

// newHost returns a provisioned host, on and online, booted at t0 - 1h.
func newHost() *host {
	return &host{
		ann: map[string]string{}, on: true, online: true, prov: Provisioned,
		last: t0.Add(-time.Hour), now: t0,
	}
}

func (h *host) input() Input {
	if h.read != nil {
		h.on = h.read()
	}
	return Input{
		Annotations: h.ann, PoweredOn: h.on, Online: h.online, Provisioning: h.prov,
		PendingRebootSince: h.pending, LastPoweredOn: h.last, LastPowerFailed: h.failed,
		Force: h.force, Now: h.now, Precision: h.precision,
	}
}

// apply applies d to the host; it returns the power operation's error.
func (h *host) apply(d Decision) error {
	for _, k := range d.RemoveAnnotations {
		delete(h.ann, k)
	}
	if d.SetPendingRebootSince {
		h.pending = d.PendingRebootSince
	}
	if !d.PowerOff && !d.PowerOn {
		return nil
	}
	on, err := d.PowerOn, error(nil)
	if h.power != nil {
		on, err = h.power(d)
	}
	h.on = on
	if err != nil {
		h.failed = true
		return err
	}
	h.failed = false
	if d.SetLastPoweredOn {
		h.last = d.LastPoweredOn
	}
	return nil
}

// step decides once and applies the decision.
func (h *host) step() Decision {
	d := Decide(h.input())
	_ = h.apply(d)
	return d
}

// settle steps until a decision has nothing to do (at most 20 steps) and
// returns the decisions, the last one included.
func (h *host) settle() []Decision {
	var ds []Decision
	for range 20 {
		d := h.step()
		ds = append(ds, d)
		if d.Nothing() {
			break
		}
	}
	return ds
}
