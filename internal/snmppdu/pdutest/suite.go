package pdutest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/snmppdu"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// Driver is what the shared suite needs to know of a PDU driver: each
// driver's tests declare one and call Run; what differs between drivers
// (their models, their agent, the errors of their bad input) is here, the
// tests are written once.
type Driver struct {
	// Kind is the driver.
	Kind snmppdu.Kind
	// Aliases are the names the default registry must know the driver by.
	Aliases []string
	// Agent is the ClusterLabs agent the driver stands in for. AgentExtra
	// are options every run of it and of fencectl gets (a power wait of 0,
	// so that no test waits).
	Agent      string
	AgentExtra []string
	// AgentRefusesMissingOutlet says the agent fails an off of an outlet
	// the PDU does not have (some read it as off, and report a success).
	AgentRefusesMissingOutlet bool
	// Models are the simulated PDUs the driver supports, the usual one
	// first; NoCycle are those without a native cycle.
	Models  []snmpsim.Model
	NoCycle []snmpsim.Model
}

// Run runs the suite's tests of d, each a subtest: Registered, Conformance,
// AgreeWithAgent, MissingOutlet, AgreeFencectl and AgentDriver. The tests
// that run the agent skip without it (fail under CI=true).
func (d Driver) Run(t *testing.T) {
	t.Run("Registered", d.registered)
	t.Run("Conformance", d.conformance)
	t.Run("AgreeWithAgent", d.agreeWithAgent)
	t.Run("MissingOutlet", d.missingOutlet)
	t.Run("AgreeFencectl", d.agreeFencectl)
	t.Run("AgentDriver", d.agentDriver)
}

// Open returns a device of d for s, reached with v and changed by mod,
// closed when t ends.
func (d Driver) Open(t testing.TB, s *snmpsim.Sim, v Version, mod func(*snmppdu.Config)) *snmppdu.Device {
	t.Helper()
	return OpenSim(t, d.Kind, s, v, mod)
}

// Method wraps a device for fence.Do, with fast polling.
func (d Driver) Method(dev fence.Device, plug string) *fence.Method {
	return Method(d.Kind.Name, dev, plug)
}

// Args are the agent's (and fencectl's) options to run action on plug of
// s, reached with v: AgentArgs with d.AgentExtra, then extra.
func (d Driver) Args(s *snmpsim.Sim, v Version, plug, action string, extra ...string) []string {
	return AgentArgs(s, v, plug, action, append(slices.Clone(d.AgentExtra), extra...)...)
}

// RequireAgent returns the agent's path, or skips t (fails it under
// CI=true) when it or net-snmp's tools are missing.
func (d Driver) RequireAgent(t testing.TB) string {
	t.Helper()
	return RequireAgent(t, d.Agent)
}

// Fencectl returns cmd/fencectl built once per test binary, or skips t
// when that fencectl does not know the driver.
func (d Driver) Fencectl(t testing.TB) string {
	t.Helper()
	return proctest.Fencectl(t, d.Kind.Name, "--snmp-priv-prot")
}

// OpenParams opens s through the default registry as method pdu-a of
// worker-2, by the agent's name, with the agent's parameters (plug 2, fast
// polling) and kv; it is closed when t ends.
func (d Driver) OpenParams(t testing.TB, s *snmpsim.Sim, kv ...string) *fence.Method {
	t.Helper()
	p := fence.NewParams(append([]string{"ip", snmpsim.Host, "ipport", strconv.Itoa(s.Port), "plug", "2",
		"stonith_status_sleep", "0.01", "power_timeout", "2"}, kv...)...)
	m, err := fence.DefaultRegistry().Open(Ctx(t), "", &fence.MethodOptions{Node: "worker-2", Name: "pdu-a", Driver: d.Agent, Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { m.Device.(io.Closer).Close() })
	return m
}

// where is how d's errors name the device of s.
func (d Driver) where(s *snmpsim.Sim) string {
	return fmt.Sprintf("%s %s:%d", d.Kind.Name, snmpsim.Host, s.Port)
}

// Truth returns the simulator's state of plug (a number, or an outlet's
// name), failing t when it has none.
func Truth(t testing.TB, s *snmpsim.Sim, plug string) fence.State {
	t.Helper()
	st, err := s.Truth(OutletOf(s, plug))
	require.NoError(t, err)
	return st
}

// registered: the default registry knows the driver by each alias, with
// the agent's parameters.
func (d Driver) registered(t *testing.T) {
	var params []fence.ParamSpec
	for _, name := range d.Aliases {
		drv, ok := fence.DefaultRegistry().Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, d.Kind.Name, drv.Name)
		params = drv.Params
	}
	keys := map[string]bool{}
	for _, p := range params {
		keys[p.Name] = true
	}
	for _, k := range []string{"snmp_version", "community", "snmp_auth_prot", "snmp_sec_level", "snmp_priv_prot", "snmp_priv_passwd", "username", "password", "plug", "snmp_timeout", "snmp_retries", "pdu_model"} {
		assert.True(t, keys[k], k)
	}
}

// noCycle hides the Cycler of a device whose model has no native cycle:
// its Cycle fails with fence.ErrUnsupported, which the conformance suite
// does not expect of a Cycler.
type noCycle struct{ d *snmppdu.Device }

func (n noCycle) Status(ctx context.Context, plug string) (fence.State, error) {
	return n.d.Status(ctx, plug)
}
func (n noCycle) Set(ctx context.Context, plug string, s fence.State) error {
	return n.d.Set(ctx, plug, s)
}
func (n noCycle) List(ctx context.Context) ([]fence.Plug, error) { return n.d.List(ctx) }
func (n noCycle) Monitor(ctx context.Context) error              { return n.d.Monitor(ctx) }
func (n noCycle) Close() error                                   { return n.d.Close() }

// conformance runs fence's conformance suite on every model, SNMPv1, v2c
// and v3 (the last outlet among the plugs) and a missing outlet 0, against
// net-snmp's snmpd; on the usual model, where it has names, a missing
// outlet given by name too. (Plugs given by name are tested beside the agent: the suite
// wants List to report the plugs it switches, and List reports outlets by
// number.)
func (d Driver) conformance(t *testing.T) {
	run := func(t *testing.T, s *snmpsim.Sim, v Version, plugs []string, missing string) {
		fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
			var dev fence.Device = d.Open(t, s, v, nil)
			if slices.Contains(d.NoCycle, s.Model()) {
				dev = noCycle{dev.(*snmppdu.Device)}
			}
			return &fencetest.Fixture{Device: dev, Plugs: plugs, MissingPlug: missing, Truth: s.TruthFunc()}
		})
	}
	for i, m := range d.Models {
		t.Run(m.String(), func(t *testing.T) {
			s := snmpsim.Start(t, snmpsim.Options{Model: m, Outlets: 8, Community: Secret})
			t.Run("v2c", func(t *testing.T) { run(t, s, V2, []string{"1", "2", "3"}, "9") })
			t.Run("v3", func(t *testing.T) { run(t, s, V3, []string{"4", "5", "8"}, "10") }) // 8: the last outlet
			t.Run("v1", func(t *testing.T) { run(t, s, V1, []string{"6", "7"}, "12") })
			t.Run("v1/missing-zero", func(t *testing.T) { run(t, s, V1, []string{"1", "8"}, "0") })
			if i > 0 {
				return
			}
			if m.HasNames() {
				t.Run("v2c/missing-name", func(t *testing.T) { run(t, s, V2, []string{"7", "8"}, "no-such-outlet") })
			}
		})
	}
}

// agreeWithAgent puts fencekit and the agent (which runs net-snmp's
// snmpget, snmpset and snmpwalk) on the same live simulator, in turns, and
// checks that each reads the state the other left, on the first and the
// last outlet (where an index off by one would show), by name where the
// model has names, and that both list the same outlets. The first two
// models run with SNMPv1, v2c and v3, the others with v2c and v3; each
// reboots both ways with v2c, the usual one with every version.
func (d Driver) agreeWithAgent(t *testing.T) {
	agent := d.RequireAgent(t)
	type tc struct {
		model snmpsim.Model
		v     Version
		full  bool
	}
	var cases []tc
	for i, m := range d.Models {
		if i <= 1 {
			cases = append(cases, tc{m, V1, i == 0})
		}
		cases = append(cases, tc{m, V2, true}, tc{m, V3, i == 0})
	}
	for _, c := range cases {
		t.Run(c.model.String()+"/"+c.v.Name, func(t *testing.T) {
			o := snmpsim.Options{Model: c.model, Outlets: 4}
			if c.model.HasNames() {
				o.Names = map[int]string{3: "web-3"}
			}
			s := snmpsim.Start(t, o)
			dev := d.Open(t, s, c.v, nil)
			ours := func(a fence.Action, plug string) {
				t.Helper()
				res, err := fence.Do(Ctx(t), d.Method(dev, plug), a)
				require.NoError(t, err, "fencekit %v %s", a, plug)
				if a == fence.ActionOff {
					require.True(t, res.Fenced())
				}
			}
			theirs := func(action, plug, stdout string) {
				t.Helper()
				r := proctest.Run(t, nil, agent, d.Args(s, c.v, plug, action)...)
				require.Equal(t, 0, r.Code, "%s %s %s: %s", d.Agent, action, plug, r.Stderr)
				assert.Equal(t, stdout, r.Stdout, "%s %s %s", d.Agent, action, plug)
			}
			agree := func(plug string, want fence.State, after string) {
				t.Helper()
				st, err := dev.Status(Ctx(t), plug)
				require.NoError(t, err)
				assert.Equal(t, want, st, "fencekit's status of %s after %s", plug, after)
				assert.Equal(t, want, d.agentStatus(t, agent, s, c.v, plug), "%s's status of %s after %s", d.Agent, plug, after)
				assert.Equal(t, want, Truth(t, s, plug), "the PDU's state of %s after %s", plug, after)
			}

			ours(fence.ActionOff, "1")
			agree("1", fence.StateOff, "fencekit off")
			theirs("on", "1", "Success: Powered ON\n")
			agree("1", fence.StateOn, "agent on")
			theirs("off", "4", "Success: Powered OFF\n")
			agree("4", fence.StateOff, "agent off")
			theirs("off", "4", "Success: Already OFF\n")
			ours(fence.ActionOn, "4")
			agree("4", fence.StateOn, "fencekit on")
			if c.full {
				ours(fence.ActionReboot, "2")
				agree("2", fence.StateOn, "fencekit reboot")
				theirs("reboot", "2", "Success: Rebooted\n")
				agree("2", fence.StateOn, "agent reboot")
			}
			if c.model.HasNames() {
				theirs("off", "web-3", "Success: Powered OFF\n")
				agree("web-3", fence.StateOff, "agent off by name")
				ours(fence.ActionOn, "web-3")
				agree("3", fence.StateOn, "fencekit on by name")
			}
			for n := 1; n <= 4; n++ {
				assert.Equal(t, fence.StateOn, Truth(t, s, strconv.Itoa(n)), "outlet %d", n)
			}

			// The same outlets in the lists.
			plugs, err := dev.List(Ctx(t))
			require.NoError(t, err)
			var mine []string
			for _, p := range plugs {
				mine = append(mine, p.ID+","+p.Name)
			}
			sort.Strings(mine)
			assert.Equal(t, d.agentList(t, agent, s, c.v), mine)
		})
	}
}

// agentStatus returns the agent's status of plug.
func (d Driver) agentStatus(t *testing.T, agent string, s *snmpsim.Sim, v Version, plug string) fence.State {
	t.Helper()
	r := proctest.Run(t, nil, agent, d.Args(s, v, plug, "status")...)
	switch {
	case r.Code == 0 && r.Stdout == "Status: ON\n":
		return fence.StateOn
	case r.Code == 2 && r.Stdout == "Status: OFF\n":
		return fence.StateOff
	}
	t.Fatalf("%s status: exit %d, stdout %q, stderr %q", d.Agent, r.Code, r.Stdout, r.Stderr)
	return fence.StateUnknown
}

// agentList returns the agent's list: "number,name" lines, sorted.
func (d Driver) agentList(t *testing.T, agent string, s *snmpsim.Sim, v Version) []string {
	t.Helper()
	r := proctest.Run(t, nil, agent, d.Args(s, v, "", "list")...)
	require.Equal(t, 0, r.Code, "%s list: %s", d.Agent, r.Stderr)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	sort.Strings(lines)
	return lines
}

// missingOutlet: an off of outlet 9 on a PDU of 8, the one past the last
// (where an index off by one would show), on every model. Some agents
// read the missing outlet's noSuchInstance as "off" and report a fencing
// success they never did (logged, not copied; the others' failure is
// checked); fencekit and fencectl report an unknown plug, and fail.
func (d Driver) missingOutlet(t *testing.T) {
	agent := d.RequireAgent(t)
	type tc struct {
		m snmpsim.Model
		v Version
	}
	cases := []tc{{d.Models[0], V1}, {d.Models[0], V2}}
	for _, m := range d.Models[1:] {
		cases = append(cases, tc{m, V2})
	}
	for _, c := range cases {
		s, v := snmpsim.Start(t, snmpsim.Options{Model: c.m, Outlets: 8}), c.v
		t.Run(c.m.String()+"/"+v.Name, func(t *testing.T) {
			r := proctest.Run(t, nil, agent, d.Args(s, v, "9", "off")...)
			if r.Code == 0 {
				t.Logf("%s --plug 9 --action off on an 8-outlet PDU: %q, exit 0: a false success", d.Agent, r.Stdout)
			} else {
				t.Logf("%s --plug 9 --action off: exit %d, %q %q", d.Agent, r.Code, r.Stdout, r.Stderr)
			}
			if d.AgentRefusesMissingOutlet {
				assert.Equal(t, 1, r.Code, "%s: %s", r.Stdout, r.Stderr)
				assert.NotContains(t, r.Stdout, "Success")
			}
			dev := d.Open(t, s, v, nil)
			res, err := fence.Do(Ctx(t), d.Method(dev, "9"), fence.ActionOff)
			require.Error(t, err)
			assert.ErrorIs(t, err, fence.ErrUnknownPlug)
			assert.False(t, res.Fenced(), "never a success")
			assert.Contains(t, err.Error(), "method pdu-off")
			assert.Contains(t, err.Error(), d.where(s)+": GET outlet 9 state")
			// The OID read is outlet 9's cell of the model's state column,
			// by the model's own index (the Managed ePDU counts from 0).
			model, merr := dev.Model(Ctx(t))
			require.NoError(t, merr)
			var se *snmppdu.Error
			if assert.ErrorAs(t, err, &se) {
				assert.Equal(t, model.Status.OID(9), se.OID)
			}

			var bin string
			t.Run("fencectl", func(t *testing.T) { bin = d.Fencectl(t) })
			if bin != "" {
				r := proctest.Run(t, nil, bin, append(d.Args(s, v, "9", "off"), "--driver", d.Kind.Name)...)
				assert.Equal(t, 1, r.Code)
				assert.NotContains(t, r.Stdout, "Success")
				assert.Contains(t, r.Stderr, "Failed: Unable to obtain correct plug status or plug is not available")
			}
		})
	}
}

// agreeFencectl runs the built fencectl and the agent with the same
// command lines on two simulators, and compares what they print, return
// and leave: SNMPv1, v2c and v3 on the usual model, v1 and v3 on the next.
func (d Driver) agreeFencectl(t *testing.T) {
	agent := d.RequireAgent(t)
	bin := d.Fencectl(t)
	type tc struct {
		m snmpsim.Model
		v Version
	}
	cases := []tc{{d.Models[0], V1}, {d.Models[0], V2}, {d.Models[0], V3}}
	if len(d.Models) > 1 {
		cases = append(cases, tc{d.Models[1], V1}, tc{d.Models[1], V3})
	}
	for _, c := range cases {
		m, v := c.m, c.v
		t.Run(m.String()+"/"+v.Name, func(t *testing.T) {
			ours := snmpsim.Start(t, snmpsim.Options{Model: m, Outlets: 4})
			theirs := snmpsim.Start(t, snmpsim.Options{Model: m, Outlets: 4})
			third := "3"
			if m.HasNames() {
				third = "node3"
			}
			steps := []struct{ action, plug string }{
				{"status", "1"}, {"off", "1"}, {"off", "1"}, {"status", "1"}, {"on", "1"}, {"on", "1"},
				{"reboot", "4"}, {"status", "4"}, {"off", third}, {"status", third}, {"monitor", ""}, {"list", ""},
			}
			for i, st := range steps {
				a := proctest.Run(t, nil, bin, append(d.Args(ours, v, st.plug, st.action), "--driver", d.Kind.Name)...)
				b := proctest.Run(t, nil, agent, d.Args(theirs, v, st.plug, st.action)...)
				assert.Equal(t, b.Stdout, a.Stdout, "step %d %s %s: stdout", i, st.action, st.plug)
				assert.Equal(t, b.Code, a.Code, "step %d %s %s: exit code\nours: %s\ntheirs: %s", i, st.action, st.plug, a.Stderr, b.Stderr)
				sameOutlets(t, theirs, ours, "step %d", i)
			}
		})
	}
}

// sameOutlets checks that the four outlets of want and got are in the
// same states.
func sameOutlets(t *testing.T, want, got *snmpsim.Sim, msg string, args ...any) {
	t.Helper()
	for n := 1; n <= 4; n++ {
		assert.Equal(t, Truth(t, want, strconv.Itoa(n)), Truth(t, got, strconv.Itoa(n)), "%s: outlet %d", fmt.Sprintf(msg, args...), n)
	}
}

// agentDriver: fencectl's agent driver runs ClusterLabs' agent, and takes
// that agent's own options (from its metadata) on the command line and
// passes them on: --snmp-version 2c reaches the agent, which switches the
// outlet.
func (d Driver) agentDriver(t *testing.T) {
	d.RequireAgent(t)
	bin := d.Fencectl(t)
	s := snmpsim.Start(t, snmpsim.Options{Model: d.Models[0], Outlets: 4})
	r := proctest.Run(t, nil, bin, append([]string{"--driver", "agent", "--agent", d.Agent}, d.Args(s, V2, "3", "off")...)...)
	require.Equal(t, 0, r.Code, "%s%s", r.Stdout, r.Stderr)
	assert.Equal(t, "Success: Powered OFF\n", r.Stdout)
	assert.Equal(t, fence.StateOff, Truth(t, s, "3"))
	assert.NotContains(t, r.Stdout+r.Stderr, "not recognized")
}

// FenceAgentsRemediationCommandLines runs the command lines
// fence-agents-remediation builds from its template (--key=value for every
// parameter, --action=status to check a template, then the remediation's
// --action=reboot, off and on): fencectl installed under the agent's name
// and the agent, each on a PDU of its own, return the same codes and
// output and leave the same outlets, a wrong community or password
// included.
func (d Driver) FenceAgentsRemediationCommandLines(t *testing.T) {
	agent := d.RequireAgent(t)
	ours := proctest.FencectlAs(t, d.Agent)
	for _, v := range []Version{V2, V3} {
		t.Run(v.Name, func(t *testing.T) {
			s1 := snmpsim.Start(t, snmpsim.Options{Model: d.Models[0], Outlets: 4})
			s2 := snmpsim.Start(t, snmpsim.Options{Model: d.Models[0], Outlets: 4})
			for i, st := range []struct {
				action, plug string
				bad          bool
			}{
				{"status", "2", false}, {"reboot", "2", false}, {"status", "2", false}, {"off", "2", false},
				{"status", "2", false}, {"status", "2", true}, {"on", "2", true}, {"on", "2", false},
			} {
				argv := func(s *snmpsim.Sim) []string {
					args := d.Args(s, v, st.plug, st.action)
					if st.bad {
						args = wrongSecret(args)
					}
					return proctest.EqualsForm(args)
				}
				a := proctest.Run(t, nil, ours, argv(s1)...)
				b := proctest.Run(t, nil, agent, argv(s2)...)
				assert.Equal(t, b.Code, a.Code, "step %d %s (bad secret %v): exit code\nours: %s\ntheirs: %s", i, st.action, st.bad, a.Stderr, b.Stderr)
				assert.Equal(t, b.Stdout, a.Stdout, "step %d %s: stdout", i, st.action)
				sameOutlets(t, s2, s1, "step %d", i)
			}
		})
	}
}

// wrongSecret returns args with the community (SNMPv1/2c) or the
// passwords (SNMPv3) replaced by wrong ones.
func wrongSecret(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		switch out[i] {
		case "--community", "-c", "--password", "-p", "--snmp-priv-passwd", "--snmp-auth-passwd":
			out[i+1] = "wrong-" + out[i+1]
		}
	}
	return out
}

// BadInput is one case of Driver.BadInput: the method opened with the
// agent's parameters KV on a simulator of Sim (the usual model when zero,
// with the community Secret), whose off and status must fail within Within
// with an error wrapping Is that says Says.
type BadInput struct {
	Name   string
	Sim    snmpsim.Options
	KV     []string
	Is     error
	Within time.Duration
	Says   string
}

// badInput are the cases every driver runs before its own.
var badInput = []BadInput{
	{Name: "wrong community", KV: []string{"snmp_version", "2c", "community", "Qz7-wrong-" + Secret, "snmp_timeout", "0.3", "snmp_retries", "1"},
		Is: snmppdu.ErrNoReply, Within: 3 * time.Second, Says: "no reply within 600ms (2 tries of 300ms)"},
	{Name: "wrong v3 passphrase", KV: []string{"snmp_version", "3", "username", snmpsim.DefaultUser, "password", "Qz7-wrong-" + Secret,
		"snmp_auth_prot", "SHA", "snmp_priv_passwd", snmpsim.DefaultPrivPass, "snmp_priv_prot", "AES"},
		Is: fence.ErrLoginDenied, Within: 2 * time.Second, Says: "usmStatsWrongDigests"},
}

// BadInput runs a wrong community, a wrong SNMPv3 passphrase and cases:
// each a clear error within the configured timeout, naming the device and
// the method, never holding a secret, never a success, nothing switched. Then it sets outlet 2 of the usual model to
// each raw value of unmapped, outside the model's mapping: the status
// fails with an error wrapping the value's error and has no state (a value
// neither on nor off says so), and an off that cannot be verified fails.
func (d Driver) BadInput(t *testing.T, cases []BadInput, unmapped map[int]error) {
	usual := snmpsim.Start(t, snmpsim.Options{Model: d.Models[0], Outlets: 4, Community: Secret})
	for _, tc := range append(slices.Clone(badInput), cases...) {
		t.Run(tc.Name, func(t *testing.T) {
			s := usual
			if tc.Sim.Model != 0 {
				o := tc.Sim
				o.Outlets, o.Community = 4, Secret
				s = snmpsim.Start(t, o)
			}
			m := d.OpenParams(t, s, tc.KV...)
			for _, a := range []fence.Action{fence.ActionOff, fence.ActionStatus} {
				start := time.Now()
				res, err := fence.Do(Ctx(t), m, a)
				took := time.Since(start)
				require.Error(t, err)
				t.Log(err)
				assert.False(t, res.Fenced(), "never a success")
				assert.ErrorIs(t, err, tc.Is)
				assert.Less(t, took, tc.Within)
				assert.True(t, fence.IsNotDone(err), "nothing was switched")
				msg := err.Error()
				assert.Contains(t, msg, "method pdu-a")
				assert.Contains(t, msg, d.where(s))
				assert.Contains(t, msg, tc.Says)
				assert.NotContains(t, msg, Secret)
			}
			assert.Equal(t, fence.StateOn, Truth(t, s, "2"))
		})
	}

	m := d.OpenParams(t, usual, "snmp_version", "2c", "community", Secret)
	for v, is := range unmapped {
		require.NoError(t, usual.SetRaw(2, v))
		res, err := fence.Do(Ctx(t), m, fence.ActionStatus)
		require.Error(t, err)
		assert.ErrorIs(t, err, is)
		assert.Equal(t, fence.StateUnknown, res.State)
		if is == fence.ErrBadState {
			model, merr := m.Device.(*snmppdu.Device).Model(Ctx(t))
			require.NoError(t, merr)
			assert.Contains(t, err.Error(), fmt.Sprintf("value %d is neither on (%d) nor off (%d) for the %s", v, model.On, model.Off, model.Name))
		}
		res, err = fence.Do(Ctx(t), m, fence.ActionOff)
		require.Error(t, err)
		assert.False(t, res.Fenced(), "value %d: never a success", v)
	}
}
