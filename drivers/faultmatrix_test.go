package drivers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/apc"
	"github.com/fencekit/fencekit/drivers/brocade"
	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/drivers/redfish"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
	"github.com/fencekit/fencekit/internal/brocadesim/fos"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/redfishsim"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// The faults of the matrix, in its column order.
const (
	fSetIgnored = "set ignored"
	fLies       = "status lies"
	fFlaps      = "status flaps"
	fTimeout    = "timeout mid-action"
	fLogin      = "login refused"
	fGarbled    = "reply garbled"
	fOneDown    = "one of two down"
	fOnFails    = "on fails after off"
)

var faults = []string{fSetIgnored, fLies, fFlaps, fTimeout, fLogin, fGarbled, fOneDown, fOnFails}

// unit is one device of a cell: a method and a way to read its plug's true
// state (as the simulator holds it, not as the driver reads it).
type unit struct {
	m     *fence.Method
	truth func() fence.State
}

// kind is one driver kind of the matrix. healthy opens a device on a live
// peer that behaves; faulty opens one showing the fault, or reports false
// when the peer cannot show it (the cell then runs on the fake).
type kind struct {
	name    string
	healthy func(t *testing.T, name string) unit
	faulty  func(t *testing.T, fault string) (unit, bool)
	// pair opens two devices on one peer: one that behaves, and one whose
	// login the peer refuses (for "on fails after off").
	pair func(t *testing.T) (ok, refused unit)
}

// opts are the matrix's verification options: short, so that a fault that
// leaves nothing to confirm ends quickly.
var opts = fence.Options{PowerTimeout: 1500 * time.Millisecond, PollInterval: 20 * time.Millisecond, IOTimeout: 1500 * time.Millisecond}

func method(name, driver string, d fence.Device, plug string, a fence.Action) *fence.Method {
	return &fence.Method{Name: name, Node: "node-1", Driver: driver, Device: d, Plug: plug, Action: a, Options: opts}
}

func closeLater(t *testing.T, d any) {
	if c, ok := d.(interface{ Close() error }); ok {
		t.Cleanup(func() { c.Close() })
	}
}

// fakeKind is the in-memory device, which shows every fault.
func fakeUnit(t *testing.T, name string, f *fake.Fault) unit {
	d := fake.New(fake.Options{})
	if f != nil {
		d.Inject(*f)
	}
	return unit{m: method(name, "fake", d, "1", 0), truth: func() fence.State { return d.Truth("1") }}
}

func fakeFaulty(t *testing.T, fault string) (unit, bool) {
	switch fault {
	case fSetIgnored:
		return fakeUnit(t, "fake", &fake.Fault{Op: fake.OpSet, Kind: fake.Ignore}), true
	case fLies:
		return fakeUnit(t, "fake", &fake.Fault{Op: fake.OpStatus, Kind: fake.Lie, State: fence.StateOn}), true
	case fFlaps:
		return fakeUnit(t, "fake", &fake.Fault{Op: fake.OpStatus, Kind: fake.Flap}), true
	case fTimeout:
		return fakeUnit(t, "fake", &fake.Fault{Op: fake.OpSet, Kind: fake.Hang}), true
	case fLogin:
		return fakeUnit(t, "fake", &fake.Fault{Kind: fake.Fail}), true
	case fGarbled:
		return fakeUnit(t, "fake", &fake.Fault{Op: fake.OpStatus, Kind: fake.Unknown}), true
	case fOneDown:
		return fakeUnit(t, "fake", &fake.Fault{Kind: fake.Down}), true
	}
	return unit{}, false
}

func ipmiKind() kind {
	open := func(t *testing.T, name string, mod func(*ipmisim.GoBMC, *ipmi.Options)) (unit, *ipmisim.GoBMC) {
		b := ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{})
		o := ipmi.Options{Host: ipmisim.Host, Port: b.Port, Username: b.User, Password: fence.NewSecret(b.Password), Timeout: 500 * time.Millisecond, Retries: 1}
		if mod != nil {
			mod(b, &o)
		}
		d, err := ipmi.New(o)
		require.NoError(t, err)
		closeLater(t, d)
		return unit{m: method(name, "ipmi", d, "", 0), truth: b.Truth}, b
	}
	return kind{name: "ipmi (go-ipmi's BMC)",
		healthy: func(t *testing.T, name string) unit { u, _ := open(t, name, nil); return u },
		pair: func(t *testing.T) (unit, unit) {
			u, b := open(t, "off", nil)
			o := ipmi.Options{Host: ipmisim.Host, Port: b.Port, Username: b.User, Password: fence.NewSecret("wrong-password"), Timeout: 500 * time.Millisecond}
			d, err := ipmi.New(o)
			require.NoError(t, err)
			closeLater(t, d)
			return u, unit{m: method("on", "ipmi", d, "", 0), truth: b.Truth}
		},
		faulty: func(t *testing.T, fault string) (unit, bool) {
			switch fault {
			case fSetIgnored:
				u, b := open(t, "ipmi", nil)
				b.SetFault(ipmisim.FaultStuck)
				return u, true
			case fTimeout:
				u, b := open(t, "ipmi", nil)
				_, err := u.m.Device.Status(context.Background(), "") // the session is set up
				require.NoError(t, err)
				b.SetFault(ipmisim.FaultSilent)
				return u, true
			case fLogin:
				u, _ := open(t, "ipmi", func(_ *ipmisim.GoBMC, o *ipmi.Options) { o.Password = fence.NewSecret("wrong-password") })
				return u, true
			case fGarbled:
				u, b := open(t, "ipmi", nil)
				b.SetFault(ipmisim.FaultGarbage)
				return u, true
			case fOneDown:
				u, b := open(t, "ipmi", nil)
				b.SetFault(ipmisim.FaultSilent)
				return u, true
			}
			return unit{}, false
		}}
}

func redfishKind() kind {
	open := func(t *testing.T, name string, mod func(*redfishsim.Server, *redfish.Options)) (unit, *redfishsim.Server) {
		s := redfishsim.New(redfishsim.Options{})
		t.Cleanup(s.Close)
		o := redfish.Options{Endpoint: s.URL(), Username: s.Username(), Password: fence.NewSecret(s.Password()), RootCAs: s.CertPool(), Timeout: time.Second}
		if mod != nil {
			mod(s, &o)
		}
		d, err := redfish.New(o)
		require.NoError(t, err)
		closeLater(t, d)
		return unit{m: method(name, "redfish", d, "", 0), truth: func() fence.State { return s.Truth("1") }}, s
	}
	return kind{name: "redfish (Redfish responder)",
		healthy: func(t *testing.T, name string) unit { u, _ := open(t, name, nil); return u },
		pair: func(t *testing.T) (unit, unit) {
			u, s := open(t, "off", nil)
			d, err := redfish.New(redfish.Options{Endpoint: s.URL(), Username: s.Username(), Password: fence.NewSecret("wrong-password"), RootCAs: s.CertPool(), Timeout: time.Second})
			require.NoError(t, err)
			closeLater(t, d)
			return u, unit{m: method("on", "redfish", d, "", 0), truth: u.truth}
		},
		faulty: func(t *testing.T, fault string) (unit, bool) {
			u, s := open(t, "redfish", nil)
			switch fault {
			case fSetIgnored:
				s.Inject(redfishsim.Fault{Kind: redfishsim.FaultDropReset})
			case fLies:
				s.Inject(redfishsim.Fault{Kind: redfishsim.FaultPowerState, Value: "On", Method: "GET"})
			case fTimeout:
				s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang, Method: "POST"})
			case fLogin:
				u, _ = open(t, "redfish", func(_ *redfishsim.Server, o *redfish.Options) { o.Password = fence.NewSecret("wrong-password") })
			case fGarbled:
				s.Inject(redfishsim.Fault{Kind: redfishsim.FaultBadJSON})
			case fOneDown:
				s.Close()
			default:
				return unit{}, false
			}
			return u, true
		}}
}

func brocadeKind() kind {
	open := func(t *testing.T, name string, mod func(*brocade.Options)) (unit, *brocadesim.Switch) {
		sw := brocadesim.Start(t, brocadesim.Options{Ports: 4})
		o := brocade.Options{Host: brocadesim.Host, Port: sw.Port, Username: sw.User, Password: fence.NewSecret(sw.Password),
			KnownHostsFiles: []string{sw.KnownHosts}, LoginTimeout: 3 * time.Second, CommandTimeout: time.Second}
		// The healthy half of "on fails after off" gets longer bounds: an
		// ssh session and a shell command under the race detector on 2
		// busy cores can take longer than the faults' short ones (seen: a
		// status timed out at 1 s); that cell is about what a failed on
		// means, not about speed.
		healthyHalf := name == "off"
		if healthyHalf {
			o.CommandTimeout = 5 * time.Second
		}
		if mod != nil {
			mod(&o)
		}
		d, err := brocade.New(o)
		require.NoError(t, err)
		closeLater(t, d)
		m := method(name, "brocade", d, "1", 0)
		if healthyHalf {
			m.Options.IOTimeout, m.Options.PowerTimeout = 5*time.Second, 5*time.Second
		}
		return unit{m: m, truth: func() fence.State { st, _ := sw.Truth("1"); return st }}, sw
	}
	return kind{name: "brocade (sshd, FOS shell)",
		healthy: func(t *testing.T, name string) unit { u, _ := open(t, name, nil); return u },
		pair: func(t *testing.T) (unit, unit) {
			u, sw := open(t, "off", nil)
			d, err := brocade.New(brocade.Options{Host: brocadesim.Host, Port: sw.Port, Username: sw.User, Password: fence.NewSecret("wrong-password"),
				KnownHostsFiles: []string{sw.KnownHosts}, LoginTimeout: 3 * time.Second, CommandTimeout: time.Second})
			require.NoError(t, err)
			closeLater(t, d)
			return u, unit{m: method("on", "brocade", d, "1", 0), truth: u.truth}
		},
		faulty: func(t *testing.T, fault string) (unit, bool) {
			switch fault {
			case fTimeout, fOneDown:
				u, sw := open(t, "brocade", nil)
				require.NoError(t, sw.SetFault(fos.Hang))
				return u, true
			case fLogin:
				u, _ := open(t, "brocade", func(o *brocade.Options) { o.Password = fence.NewSecret("wrong-password") })
				return u, true
			case fGarbled:
				u, sw := open(t, "brocade", nil)
				require.NoError(t, sw.SetFault(fos.Garbage))
				return u, true
			}
			return unit{}, false
		}}
}

func apcKind() kind {
	open := func(t *testing.T, name string, mod func(*apc.Options)) (unit, *snmpsim.Sim) {
		s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
		o := apc.Options{Host: snmpsim.Host, Port: s.Port, Version: "2c", Community: fence.NewSecret(s.Options.Community), Timeout: 300 * time.Millisecond}
		if mod != nil {
			mod(&o)
		}
		d, err := apc.New(o)
		require.NoError(t, err)
		closeLater(t, d)
		return unit{m: method(name, "apc", d, "1", 0), truth: func() fence.State { st, _ := s.Truth("1"); return st }}, s
	}
	return kind{name: "apc (snmpd PDU)",
		healthy: func(t *testing.T, name string) unit { u, _ := open(t, name, nil); return u },
		pair: func(t *testing.T) (unit, unit) {
			u, s := open(t, "off", nil)
			// A read-only community: the PDU refuses the SET.
			d, err := apc.New(apc.Options{Host: snmpsim.Host, Port: s.Port, Version: "2c", Community: fence.NewSecret(s.Options.ROCommunity), Timeout: 300 * time.Millisecond})
			require.NoError(t, err)
			closeLater(t, d)
			return u, unit{m: method("on", "apc", d, "1", 0), truth: u.truth}
		},
		faulty: func(t *testing.T, fault string) (unit, bool) {
			switch fault {
			case fSetIgnored:
				u, s := open(t, "apc", nil)
				require.NoError(t, s.SetDelay(time.Hour)) // the outlet switches an hour later
				return u, true
			case fTimeout, fOneDown:
				u, s := open(t, "apc", nil)
				s.Stop()
				return u, true
			case fLogin:
				// A read-only community: reads work, the SET is refused.
				ok, refused := apcKind().pair(t)
				_ = ok
				return refused, true
			}
			return unit{}, false
		}}
}

// cell is one run of the matrix.
type cell struct {
	kind, fault string
	onFake      bool
	fenced      bool
	truthOff    bool
	onErr       bool
	err         error
}

// verdict is how the cell reads: "not fenced", "fenced (device off)", or a
// false fence.
func (c cell) verdict() string {
	var s string
	switch {
	case c.fenced && !c.truthOff:
		s = "FALSE FENCE"
	case c.fenced && c.onErr:
		s = "fenced, on error"
	case c.fenced:
		s = "fenced, off"
	default:
		s = "not fenced"
	}
	if c.onFake {
		s += " (fake)"
	}
	return s
}

// runCell runs one fault against one kind: an off through one level (two
// devices for "one of two down"; for "on fails after off", a reboot level of
// the device's off and an on through a second device whose login is
// refused).
func runCell(t *testing.T, k kind, fault string) cell {
	c := cell{kind: k.name, fault: fault}
	var level []*fence.Method
	var truths []func() fence.State
	action := fence.ActionOff
	switch fault {
	case fOneDown:
		a := k.healthy(t, "a")
		b, ok := k.faulty(t, fOneDown)
		if !ok {
			b, _ = fakeFaulty(t, fOneDown)
			c.onFake = true
		}
		level = []*fence.Method{a.m, b.m}
		truths = []func() fence.State{a.truth, b.truth}
	case fOnFails:
		u, on := k.pair(t)
		u.m.Action = fence.ActionOff
		on.m.Action = fence.ActionOn
		level = []*fence.Method{u.m, on.m}
		truths = []func() fence.State{u.truth}
		action = fence.ActionReboot
	default:
		u, ok := k.faulty(t, fault)
		if !ok {
			u, _ = fakeFaulty(t, fault)
			c.onFake = true
		}
		level = []*fence.Method{u.m}
		truths = []func() fence.State{u.truth}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := fence.DoLevels(ctx, "node-1", []fence.Level{{Methods: level}}, action)
	c.err = err
	c.fenced = err == nil && res.Fenced
	c.onErr = res.OnErr != nil
	c.truthOff = true
	for _, tr := range truths {
		c.truthOff = c.truthOff && tr() == fence.StateOff
	}
	if c.fenced && !c.truthOff && fault == fFlaps {
		// A flapping status may read "off" only if the plug is off: the fake
		// flaps between the truth and its opposite, so look again.
		c.truthOff = truths[0]() == fence.StateOff
	}
	return c
}

// TestFaultMatrix runs every driver kind on its live peer (the fake where
// the peer cannot show the fault) against every fault, and prints the
// matrix: no cell may be a "fenced" that was not. Run it alone with
//
//	go test ./drivers -run TestFaultMatrix -v
func TestFaultMatrix(t *testing.T) {
	kinds := []kind{ipmiKind(), redfishKind(), brocadeKind(), apcKind(),
		{name: "fake (in memory)", healthy: func(t *testing.T, name string) unit { return fakeUnit(t, name, nil) }, faulty: fakeFaulty,
			pair: func(t *testing.T) (unit, unit) {
				d := fake.New(fake.Options{})
				u := unit{m: method("off", "fake", d, "1", 0), truth: func() fence.State { return d.Truth("1") }}
				return u, unit{m: method("on", "fake", &refuseOn{d}, "1", 0), truth: u.truth}
			}}}
	var mu sync.Mutex
	results := map[string]map[string]cell{}
	for _, k := range kinds {
		results[k.name] = map[string]cell{}
		t.Run(k.name, func(t *testing.T) {
			for _, f := range faults {
				t.Run(f, func(t *testing.T) {
					t.Parallel()
					c := runCell(t, k, f)
					mu.Lock()
					results[k.name][f] = c
					mu.Unlock()
					assert.False(t, c.fenced && !c.truthOff, "a fence the devices did not confirm: %v", c.err)
					switch f {
					case fOnFails:
						assert.True(t, c.fenced && c.onErr, "a verified off with a failed on is a fence with an on error: %v", c.err)
					case fFlaps:
					default:
						assert.False(t, c.fenced, "not fenced under %q", f)
						assert.Error(t, c.err)
						assert.True(t, errors.Is(c.err, fence.ErrNotFenced))
					}
				})
			}
		})
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 2, 2, ' ', 0)
	fmt.Fprintf(w, "driver\t%s\n", strings.Join(faults, "\t"))
	for _, k := range kinds {
		row := []string{k.name}
		for _, f := range faults {
			row = append(row, results[k.name][f].verdict())
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	w.Flush()
	t.Logf("fault matrix (verdict per cell; \"(fake)\": the live peer cannot show that fault):\n%s", b.String())
	if os.Getenv("FENCEKIT_FAULT_MATRIX") != "" {
		_ = os.WriteFile(os.Getenv("FENCEKIT_FAULT_MATRIX"), []byte(b.String()), 0o644)
	}
}

// refuseOn is a fake whose power on is refused.
type refuseOn struct{ *fake.Device }

func (d *refuseOn) Set(ctx context.Context, plug string, st fence.State) error {
	if st == fence.StateOn {
		return fence.NotDone(errors.New("outlet refused to switch on"))
	}
	return d.Device.Set(ctx, plug, st)
}
