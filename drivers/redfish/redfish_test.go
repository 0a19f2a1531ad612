package redfish_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish/schemas"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/redfish"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/redfishsim"
	"github.com/fencekit/fencekit/internal/testtool"
)

// secret is a password no error may ever hold.
const secret = "Qz7-unl1kely-Pa55word"

const resetPath = "/Actions/ComputerSystem.Reset"

// start starts a responder with o, the password secret unless o has one,
// and stops it with t.
func start(t testing.TB, o redfishsim.Options) *redfishsim.Server {
	t.Helper()
	if o.Password == "" {
		o.Password = secret
	}
	s := redfishsim.New(o)
	t.Cleanup(s.Close)
	return s
}

// open opens a device on s (trusting its certificate), edited by mods, and
// closes it with t.
func open(t testing.TB, s *redfishsim.Server, mods ...func(*redfish.Options)) *redfish.Device {
	t.Helper()
	o := redfish.Options{Endpoint: s.URL(), Username: s.Username(), Password: fence.NewSecret(s.Password()), RootCAs: s.CertPool()}
	for _, m := range mods {
		m(&o)
	}
	d, err := redfish.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func ctxT(t testing.TB) context.Context { return testtool.Timeout(t, 20*time.Second) }

// method wraps a device for fence.Do with fast polling.
func method(d fence.Device, plug string, o fence.Options) *fence.Method {
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Millisecond
	}
	if o.PowerTimeout == 0 {
		o.PowerTimeout = 3 * time.Second
	}
	return &fence.Method{Name: "bmc", Node: "worker-1", Driver: "redfish", Device: d, Plug: plug, Options: o}
}

// clean checks that an error names the host and what failed, and never
// holds the password.
func clean(t *testing.T, err error, host string, parts ...string) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, secret, "the error holds the password")
	assert.Contains(t, msg, host, "the error does not name the host")
	for _, p := range parts {
		assert.Contains(t, msg, p)
	}
}

func TestOptionsFromParams(t *testing.T) {
	caDir := t.TempDir()
	s := start(t, redfishsim.Options{})
	ca, err := s.WriteCA(caDir)
	require.NoError(t, err)
	junk := filepath.Join(caDir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate"), 0o600))

	base := []string{"username", "admin", "password", secret}
	tests := []struct {
		name    string
		address string
		kv      []string
		check   func(t *testing.T, o redfish.Options)
		errKey  string
		noBase  bool
	}{
		{name: "ip and ipport", kv: []string{"ip", "10.0.0.5", "ipport", "8443"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "https://10.0.0.5:8443", o.Endpoint)
			assert.Equal(t, "", o.SystemsURI)
			assert.Equal(t, "", o.RedfishURI)
			assert.False(t, o.InsecureSkipVerify)
			assert.Equal(t, redfish.AuthBasic, o.Auth)
		}},
		{name: "default port", kv: []string{"ip", "bmc-3"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "https://bmc-3:443", o.Endpoint)
		}},
		{name: "ip with port, as the agent takes it", kv: []string{"ip", "10.0.0.5:8443"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "https://10.0.0.5:8443", o.Endpoint)
		}},
		{name: "IPv6", address: "redfish+https://[fd00::5]:8443", check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "https://[fd00::5]:8443", o.Endpoint)
		}},
		{name: "address selects the system", address: "redfish+https://bmc:8443/redfish/v1/Systems/System.Embedded.1/", check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "https://bmc:8443", o.Endpoint)
			assert.Equal(t, "/redfish/v1/Systems/System.Embedded.1", o.SystemsURI)
			assert.Equal(t, "/redfish/v1", o.RedfishURI)
		}},
		{name: "address names the root", address: "redfish://bmc/redfish/v1", check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "https://bmc:443", o.Endpoint)
			assert.Equal(t, "/redfish/v1", o.RedfishURI)
			assert.Equal(t, "", o.SystemsURI)
		}},
		{name: "address names the collection", address: "redfish://bmc/redfish/v1/Systems", check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "/redfish/v1", o.RedfishURI)
			assert.Equal(t, "", o.SystemsURI)
		}},
		{name: "plain http only when explicit", address: "redfish+http://127.0.0.1:8000", check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "http://127.0.0.1:8000", o.Endpoint)
		}},
		{name: "plain http, default port", address: "redfish+http://bmc", kv: []string{"ssl", "no"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "http://bmc:80", o.Endpoint)
		}},
		{name: "systems_uri and agreeing address", address: "redfish+https://bmc/redfish/v1/Systems/1", kv: []string{"systems-uri", "/redfish/v1/Systems/1"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "/redfish/v1/Systems/1", o.SystemsURI)
		}},
		{name: "options", kv: []string{"ip", "bmc", "systems_uri", "/redfish/v1/Systems/2", "redfish_uri", "/rf/v1/", "auth", "Session", "ssl_insecure", "", "io_timeout", "2.5", "ssl", "1"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "/redfish/v1/Systems/2", o.SystemsURI)
			assert.Equal(t, "/rf/v1", o.RedfishURI)
			assert.Equal(t, redfish.AuthSession, o.Auth)
			assert.True(t, o.InsecureSkipVerify)
			assert.Equal(t, 2500*time.Millisecond, o.Timeout)
		}},
		{name: "CA bundle", kv: []string{"ip", "bmc", "ssl_ca", ca}, check: func(t *testing.T, o redfish.Options) {
			assert.NotNil(t, o.RootCAs)
		}},
		{name: "login and passwd aliases", noBase: true, kv: []string{"ip", "bmc", "login", "root", "passwd", "pw"}, check: func(t *testing.T, o redfish.Options) {
			assert.Equal(t, "root", o.Username)
			assert.Equal(t, "pw", o.Password.Reveal())
		}},

		{name: "no host", kv: nil, errKey: "ip"},
		{name: "other driver", address: "ipmi://bmc", errKey: "address"},
		{name: "bad transport", address: "redfish+ssh://bmc", errKey: "address"},
		{name: "query", address: "redfish://bmc?systems_uri=/x", errKey: "address"},
		{name: "ssl=no without http address", kv: []string{"ip", "bmc", "ssl", "no"}, errKey: "ssl"},
		{name: "ssl=yes with http address", address: "redfish+http://bmc", kv: []string{"ssl", "yes"}, errKey: "ssl"},
		{name: "relative systems_uri", kv: []string{"ip", "bmc", "systems_uri", "Systems/1"}, errKey: "systems_uri"},
		{name: "systems_uri against address", address: "redfish://bmc/redfish/v1/Systems/1", kv: []string{"systems_uri", "/redfish/v1/Systems/2"}, errKey: "systems_uri"},
		{name: "bad auth", kv: []string{"ip", "bmc", "auth", "token"}, errKey: "auth"},
		{name: "bad ssl_insecure", kv: []string{"ip", "bmc", "ssl_insecure", "perhaps"}, errKey: "ssl_insecure"},
		{name: "insecure and secure", kv: []string{"ip", "bmc", "ssl_insecure", "1", "ssl_secure", "1"}, errKey: "ssl_secure"},
		{name: "missing CA file", kv: []string{"ip", "bmc", "ssl_ca_file", filepath.Join(caDir, "none.pem")}, errKey: "ssl_ca_file"},
		{name: "CA file with no certificate", kv: []string{"ip", "bmc", "ssl_ca_file", junk}, errKey: "ssl_ca_file"},
		{name: "bad io_timeout", kv: []string{"ip", "bmc", "io_timeout", "soon"}, errKey: "io_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kv := append(append([]string{}, base...), tc.kv...)
			if tc.noBase {
				kv = tc.kv
			}
			if tc.address != "" {
				kv = append(kv, "address", tc.address)
			}
			p := fence.NewParams(kv...)
			a, _, err := fence.AddressFromParams(p)
			require.NoError(t, err)
			o, err := redfish.OptionsFromParams(a, p)
			if tc.errKey != "" {
				var pe *fence.ParamError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tc.errKey, pe.Key)
				assert.ErrorIs(t, err, fence.ErrConfig)
				assert.NotContains(t, err.Error(), secret)
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
			_, err = redfish.New(o)
			require.NoError(t, err)
		})
	}
	t.Run("username required", func(t *testing.T) {
		p := fence.NewParams("ip", "bmc", "password", secret)
		a, _, _ := fence.AddressFromParams(p)
		_, err := redfish.OptionsFromParams(a, p)
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "username", pe.Key)
	})
}

func TestNewRefuses(t *testing.T) {
	for _, ep := range []string{"", "ftp://bmc", "https://user:pw@bmc", "https://bmc/redfish/v1", "https://"} {
		_, err := redfish.New(redfish.Options{Endpoint: ep, Username: "u"})
		assert.Error(t, err, "endpoint %q", ep)
	}
	_, err := redfish.New(redfish.Options{Endpoint: "bmc", SystemsURI: "Systems/1"})
	assert.Error(t, err)
}

func TestRegistry(t *testing.T) {
	s := start(t, redfishsim.Options{})
	ca, err := s.WriteCA(t.TempDir())
	require.NoError(t, err)
	d, ok := fence.DefaultRegistry().Lookup("fence_redfish")
	require.True(t, ok)
	assert.Equal(t, "redfish", d.Name)

	p := fence.NewParams("ip", s.Host(), "ipport", strconv.Itoa(s.Port()), "username", s.Username(),
		"password", s.Password(), "ssl_ca_file", ca, "stonith_status_sleep", "0.01")
	m, err := fence.DefaultRegistry().Open(ctxT(t), "", &fence.MethodOptions{Node: "worker-1", Name: "bmc", Driver: "fence_redfish", Params: p})
	require.NoError(t, err)
	defer m.Device.(interface{ Close() error }).Close()
	res, err := fence.Do(ctxT(t), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, fence.StateOff, s.Truth("1"))

	// By address, the system in the path.
	p = fence.NewParams("address", s.Address()+"/redfish/v1/Systems/1", "username", s.Username(),
		"password", s.Password(), "ssl_insecure", "yes")
	m, err = fence.DefaultRegistry().Open(ctxT(t), "", &fence.MethodOptions{Node: "worker-1", Name: "bmc", Params: p})
	require.NoError(t, err)
	res, err = fence.Do(ctxT(t), m, fence.ActionStatus)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, res.State)

	// A bad parameter names its field.
	p.Set("auth", "kerberos")
	_, err = fence.DefaultRegistry().Open(ctxT(t), "", &fence.MethodOptions{Node: "worker-1", Name: "bmc", Params: p})
	var fe *fence.Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "auth", fe.Field)
	assert.NotContains(t, err.Error(), secret)
}

func TestSystemSelection(t *testing.T) {
	three := []redfishsim.System{{ID: "A"}, {ID: "B"}, {ID: "C"}}

	t.Run("only system", func(t *testing.T) {
		s := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "System.Embedded.1", PowerState: "Off"}}})
		st, err := open(t, s).Status(ctxT(t), "")
		require.NoError(t, err)
		assert.Equal(t, fence.StateOff, st)
	})

	t.Run("several, none chosen: fails listing them", func(t *testing.T) {
		s := start(t, redfishsim.Options{Systems: three})
		d := open(t, s)
		_, err := d.Status(ctxT(t), "")
		clean(t, err, s.HostPort(), "GET /redfish/v1/Systems", "Members", "3 systems",
			"/redfish/v1/Systems/A, /redfish/v1/Systems/B, /redfish/v1/Systems/C", "systems_uri")
		assert.ErrorIs(t, err, redfish.ErrSeveralSystems)
		assert.ErrorIs(t, err, fence.ErrConfig)

		err = d.Set(ctxT(t), "", fence.StateOff)
		assert.ErrorIs(t, err, redfish.ErrSeveralSystems)
		assert.True(t, fence.IsNotDone(err))
		assert.Empty(t, s.Resets(), "a reset was sent")
		for _, y := range three {
			assert.Zero(t, s.Requests("", s.SystemURI(y.ID)), "system %s was read", y.ID)
		}
	})

	t.Run("several, systems_uri chooses", func(t *testing.T) {
		s := start(t, redfishsim.Options{Systems: three})
		d := open(t, s, func(o *redfish.Options) { o.SystemsURI = s.SystemURI("B") })
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, fence.StateOn, s.Truth("A"))
		assert.Equal(t, fence.StateOff, s.Truth("B"))
		assert.Equal(t, fence.StateOn, s.Truth("C"))
		assert.Zero(t, s.Requests("", "/redfish/v1/Systems"), "discovery with systems_uri given")
	})

	t.Run("plug names a system", func(t *testing.T) {
		s := start(t, redfishsim.Options{Systems: three})
		d := open(t, s)
		require.NoError(t, d.Set(ctxT(t), "C", fence.StateOff))
		assert.Equal(t, fence.StateOff, s.Truth("C"))
		assert.Equal(t, fence.StateOn, s.Truth("A"))

		_, err := d.Status(ctxT(t), "D")
		clean(t, err, s.HostPort(), `plug "D" names no system (systems: A, B, C)`)
		assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	})

	t.Run("plug 1 stands for the selected system", func(t *testing.T) {
		s := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "System.Embedded.1"}, {ID: "2"}}})
		d := open(t, s, func(o *redfish.Options) { o.SystemsURI = s.SystemURI("System.Embedded.1") })
		require.NoError(t, d.Set(ctxT(t), "1", fence.StateOff))
		assert.Equal(t, fence.StateOff, s.Truth("System.Embedded.1"))
		assert.Equal(t, fence.StateOn, s.Truth("2"))
	})

	t.Run("unknown system URI", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s, func(o *redfish.Options) { o.SystemsURI = "/redfish/v1/Systems/nope" })
		st, err := d.Status(ctxT(t), "")
		assert.Equal(t, fence.StateUnknown, st)
		clean(t, err, s.HostPort(), "GET /redfish/v1/Systems/nope", "HTTP 404")
		assert.ErrorIs(t, err, redfish.ErrNoSuchSystem)
		assert.ErrorIs(t, err, fence.ErrUnknownPlug)
		var re *redfish.Error
		require.ErrorAs(t, err, &re)
		assert.Equal(t, http.StatusNotFound, re.Status)

		err = d.Set(ctxT(t), "", fence.StateOff)
		assert.True(t, fence.IsNotDone(err))
		assert.ErrorIs(t, err, redfish.ErrNoSuchSystem)
		assert.Empty(t, s.Resets())
	})
}

func TestPowerStates(t *testing.T) {
	tests := []struct {
		value string
		want  fence.State
		is    error
	}{
		{"On", fence.StateOn, nil},
		{"Off", fence.StateOff, nil},
		{" Off ", fence.StateOff, nil},
		{"off", fence.StateOff, nil},
		{"PoweringOn", fence.StateUnknown, redfish.ErrTransition},
		{"PoweringOff", fence.StateUnknown, redfish.ErrTransition},
		{"Paused", fence.StateUnknown, fence.ErrBadState},
		{"Standby", fence.StateUnknown, fence.ErrBadState},
		{"", fence.StateUnknown, fence.ErrBadState},
	}
	s := start(t, redfishsim.Options{})
	d := open(t, s)
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.value), func(t *testing.T) {
			s.SetPowerState("1", tc.value)
			st, err := d.Status(ctxT(t), "")
			assert.Equal(t, tc.want, st)
			if tc.is == nil {
				require.NoError(t, err)
				return
			}
			clean(t, err, s.HostPort(), "GET /redfish/v1/Systems/1", "PowerState", strconv.Quote(strings.TrimSpace(tc.value)))
			assert.ErrorIs(t, err, tc.is)
			assert.ErrorIs(t, err, fence.ErrBadState)

			ps, err := d.PowerState(ctxT(t), "")
			require.NoError(t, err)
			assert.Equal(t, schemas.PowerState(strings.TrimSpace(tc.value)), ps)
		})
	}
	t.Run("transition is never a confirmed state", func(t *testing.T) {
		// The system sits in PoweringOff and a reset changes nothing: the
		// engine must time out, never report off.
		s.SetPowerState("1", "PoweringOff")
		defer s.Inject(redfishsim.Fault{Kind: redfishsim.FaultDropReset})()
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{PowerTimeout: 150 * time.Millisecond}), fence.ActionReboot)
		require.Error(t, err)
		assert.False(t, res.Fenced())
		// The first read is already no state: nothing is done.
		assert.True(t, fence.IsNotDone(err), "%v", err)
		assert.ErrorIs(t, err, redfish.ErrTransition)

		// A system stuck in PoweringOff after the reset: never off.
		slow := start(t, redfishsim.Options{PowerDelay: time.Minute})
		res, err = fence.Do(ctxT(t), method(open(t, slow), "", fence.Options{PowerTimeout: 150 * time.Millisecond}), fence.ActionOff)
		require.Error(t, err)
		assert.False(t, res.Fenced())
		assert.ErrorIs(t, err, fence.ErrTimeout)
		assert.ErrorIs(t, err, fence.ErrOutcomeUnknown)
		assert.ErrorIs(t, err, redfish.ErrTransition)
		clean(t, err, slow.HostPort(), `"PoweringOff"`, "last read unknown")
		assert.Equal(t, "PoweringOff", slow.PowerState("1"))
	})
}

func TestTransitionPolling(t *testing.T) {
	s := start(t, redfishsim.Options{PowerDelay: 80 * time.Millisecond})
	d := open(t, s)
	for _, a := range []fence.Action{fence.ActionOff, fence.ActionOn} {
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{PollInterval: 10 * time.Millisecond}), a)
		require.NoError(t, err, "%v", a)
		require.Len(t, res.Attempts, 1)
		assert.GreaterOrEqual(t, res.Attempts[0].Polls, 2, "%v: the transition took more than one read", a)
		assert.Equal(t, a.Target(), res.State)
		assert.Equal(t, a.Target(), s.Truth("1"))
	}
	// A native cycle, verified on after the system restarts.
	res, err := fence.Do(ctxT(t), method(d, "", fence.Options{RebootMethod: fence.RebootCycle, PollInterval: 10 * time.Millisecond}), fence.ActionReboot)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Attempts[0].Polls, 2)
	assert.Equal(t, []redfishsim.Reset{{System: "1", Type: "ForceOff"}, {System: "1", Type: "On"}, {System: "1", Type: "PowerCycle"}}, s.Resets())
}

func TestResetTypes(t *testing.T) {
	ops := map[string]func(d *redfish.Device) error{
		"on":       func(d *redfish.Device) error { return d.Set(context.Background(), "", fence.StateOn) },
		"off":      func(d *redfish.Device) error { return d.Set(context.Background(), "", fence.StateOff) },
		"cycle":    func(d *redfish.Device) error { return d.Cycle(context.Background(), "") },
		"soft-off": func(d *redfish.Device) error { return d.SoftOff(context.Background(), "") },
	}
	tests := []struct {
		name      string
		offered   []string
		advertise redfishsim.Advertise
		sent      map[string]string // op -> reset type; "" for an error
	}{
		{name: "all offered", offered: nil, sent: map[string]string{"on": "On", "off": "ForceOff", "cycle": "PowerCycle", "soft-off": "GracefulShutdown"}},
		{name: "fallbacks", offered: []string{"ForceOn", "ForceOff", "ForceRestart"}, sent: map[string]string{"on": "ForceOn", "off": "ForceOff", "cycle": "ForceRestart", "soft-off": ""}},
		{name: "by ActionInfo", offered: []string{"On", "ForceOff", "GracefulRestart"}, advertise: redfishsim.AdvertiseActionInfo, sent: map[string]string{"on": "On", "off": "ForceOff", "cycle": "", "soft-off": ""}},
		{name: "no ForceOff", offered: []string{"On", "GracefulShutdown", "PushPowerButton"}, sent: map[string]string{"on": "On", "off": "", "soft-off": "GracefulShutdown"}},
		{name: "none offered", offered: []string{}, sent: map[string]string{"on": "", "off": "", "cycle": "", "soft-off": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, redfishsim.Options{Systems: []redfishsim.System{{ResetTypes: tc.offered, Advertise: tc.advertise}}})
			d := open(t, s)
			for op, want := range tc.sent {
				before := len(s.Resets())
				err := ops[op](d)
				if want == "" {
					require.Error(t, err, op)
					clean(t, err, s.HostPort(), "POST /redfish/v1/Systems/1"+resetPath, "ResetType", "not offered", "it offers:")
					assert.ErrorIs(t, err, redfish.ErrResetTypeNotOffered)
					assert.ErrorIs(t, err, fence.ErrUnsupported)
					assert.True(t, fence.IsNotDone(err))
					assert.Len(t, s.Resets(), before, "%s: a reset was sent", op)
					continue
				}
				require.NoError(t, err, op)
				r := s.Resets()
				require.Len(t, r, before+1, op)
				assert.Equal(t, want, r[before].Type, op)
			}
			if tc.advertise == redfishsim.AdvertiseActionInfo {
				assert.Equal(t, 1, s.Requests("GET", s.SystemURI("1")+"/ResetActionInfo"), "the ActionInfo is read once")
			}
			types, advertised, err := d.ResetTypes(ctxT(t), "")
			require.NoError(t, err)
			assert.True(t, advertised)
			assert.Len(t, types, len(orDefault(tc.offered)))
		})
	}

	t.Run("not advertised: sent, and the refusal reported", func(t *testing.T) {
		s := start(t, redfishsim.Options{Systems: []redfishsim.System{{ResetTypes: []string{"On", "ForceOff"}, Advertise: redfishsim.AdvertiseNone}}})
		d := open(t, s)
		_, advertised, err := d.ResetTypes(ctxT(t), "")
		require.NoError(t, err)
		assert.False(t, advertised)
		require.NoError(t, d.Set(ctxT(t), "", fence.StateOff))
		err = d.Cycle(ctxT(t), "")
		clean(t, err, s.HostPort(), "POST /redfish/v1/Systems/1"+resetPath, "PowerCycle", "HTTP 400 Bad Request", "ActionParameterNotSupported")
		assert.True(t, fence.IsNotDone(err))
	})

	t.Run("a reset that would change nothing, refused", func(t *testing.T) {
		s := start(t, redfishsim.Options{RefuseNoop: true, PowerDelay: 200 * time.Millisecond})
		d := open(t, s)
		s.SetTruth("1", fence.StateOff)
		assert.NoError(t, d.Set(ctxT(t), "", fence.StateOff), "off, already off")
		require.NoError(t, d.Set(ctxT(t), "", fence.StateOn))
		assert.Equal(t, "PoweringOn", s.PowerState("1"))
		assert.NoError(t, d.Set(ctxT(t), "", fence.StateOn), "on, while powering on")
		err := d.Set(ctxT(t), "", fence.StateOff)
		assert.NoError(t, err, "off while powering on is a change")
		s.SetTruth("1", fence.StateOn)
		// Refused, and the state is not the one wanted: an error.
		defer s.Inject(redfishsim.Fault{Kind: redfishsim.FaultStatus, Code: 409, Method: "POST"})()
		err = d.Set(ctxT(t), "", fence.StateOff)
		clean(t, err, s.HostPort(), "ForceOff: HTTP 409 Conflict")
		assert.True(t, fence.IsNotDone(err))
	})
}

func orDefault(ts []string) []string {
	if ts == nil {
		return redfishsim.DefaultResetTypes
	}
	return ts
}

func TestActionStatusChecked(t *testing.T) {
	tests := []struct {
		code    int
		notDone bool
		login   bool
	}{
		{400, true, false},
		{401, true, true},
		{403, true, true},
		{404, true, false},
		{405, true, false},
		{409, true, false},
		{500, false, false},
		{503, false, false},
		{302, false, false},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			s := start(t, redfishsim.Options{})
			d := open(t, s)
			_, err := d.Status(ctxT(t), "")
			require.NoError(t, err)
			s.Inject(redfishsim.Fault{Kind: redfishsim.FaultStatus, Code: tc.code, Method: "POST"})
			err = d.Set(ctxT(t), "", fence.StateOff)
			clean(t, err, s.HostPort(), "POST /redfish/v1/Systems/1"+resetPath, "ForceOff: HTTP "+strconv.Itoa(tc.code))
			assert.Equal(t, tc.notDone, fence.IsNotDone(err), "%v", err)
			assert.Equal(t, tc.login, errors.Is(err, fence.ErrLoginDenied))
			var re *redfish.Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.code, re.Status)
		})
	}
}

func TestBadInput(t *testing.T) {
	t.Run("wrong password", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s, func(o *redfish.Options) { o.Password = fence.NewSecret(secret + "-wrong") })
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
		assert.False(t, res.Fenced())
		require.Error(t, err)
		assert.NotContains(t, err.Error(), secret)
		clean(t, err, s.HostPort(), "GET /redfish/v1/Systems", "HTTP 401 Unauthorized", "InsufficientPrivilege")
		assert.ErrorIs(t, err, fence.ErrLoginDenied)
		assert.True(t, fence.IsNotDone(err))
		assert.Empty(t, s.Resets())
	})

	t.Run("wrong password, session", func(t *testing.T) {
		s := start(t, redfishsim.Options{SessionOnly: true})
		d := open(t, s, func(o *redfish.Options) { o.Password = fence.NewSecret("x" + secret); o.Auth = redfish.AuthSession })
		err := d.Set(ctxT(t), "", fence.StateOff)
		clean(t, err, s.HostPort(), "POST /redfish/v1/SessionService/Sessions", "login: HTTP 401")
		assert.ErrorIs(t, err, fence.ErrLoginDenied)
		assert.True(t, fence.IsNotDone(err))
		assert.Empty(t, s.Resets())
	})

	t.Run("basic refused by a session-only service", func(t *testing.T) {
		s := start(t, redfishsim.Options{SessionOnly: true})
		_, err := open(t, s).Status(ctxT(t), "")
		assert.ErrorIs(t, err, fence.ErrLoginDenied)
	})

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		d, err := redfish.New(redfish.Options{Endpoint: "https://" + addr, Username: "admin", Password: fence.NewSecret(secret),
			SystemsURI: "/redfish/v1/Systems/1"})
		require.NoError(t, err)
		defer d.Close()
		_, err = d.Status(ctxT(t), "")
		clean(t, err, addr, "GET /redfish/v1/Systems/1", "cannot connect", "connection refused")
		assert.ErrorIs(t, err, fence.ErrUnreachable)

		err = d.Set(ctxT(t), "", fence.StateOff)
		assert.ErrorIs(t, err, fence.ErrUnreachable)
		assert.True(t, fence.IsNotDone(err))
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
		assert.False(t, res.Fenced())
		assert.ErrorIs(t, err, fence.ErrUnreachable)
	})

	t.Run("never reaches the state", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultDropReset})
		start := time.Now()
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{PowerTimeout: 200 * time.Millisecond}), fence.ActionOff)
		assert.Less(t, time.Since(start), 2*time.Second)
		require.Error(t, err)
		assert.False(t, res.Fenced())
		assert.ErrorIs(t, err, fence.ErrTimeout)
		assert.ErrorIs(t, err, fence.ErrOutcomeUnknown)
		assert.Contains(t, err.Error(), "want off, last read on")
		assert.Equal(t, fence.StateOn, s.Truth("1"))
	})

	t.Run("malformed replies", func(t *testing.T) {
		sysURI := "/redfish/v1/Systems/1"
		tests := []struct {
			name  string
			fault redfishsim.Fault
			parts []string
			is    []error
		}{
			{"bad JSON", redfishsim.Fault{Kind: redfishsim.FaultBadJSON, Path: sysURI}, []string{"GET " + sysURI, "not the expected JSON", "invalid character"}, []error{redfish.ErrMalformedReply}},
			{"500", redfishsim.Fault{Kind: redfishsim.FaultStatus, Path: sysURI}, []string{"GET " + sysURI, "HTTP 500 Internal Server Error", "InternalError"}, nil},
			{"missing PowerState", redfishsim.Fault{Kind: redfishsim.FaultNoPowerState}, []string{"GET " + sysURI, "PowerState: missing"}, []error{redfish.ErrMalformedReply, fence.ErrBadState}},
			{"bad service root", redfishsim.Fault{Kind: redfishsim.FaultBadJSON, Path: "/redfish/v1"}, []string{"GET /redfish/v1", "not a service root"}, []error{redfish.ErrMalformedReply}},
			{"500 on the collection", redfishsim.Fault{Kind: redfishsim.FaultStatus, Code: 503, Path: "/redfish/v1/Systems"}, []string{"GET /redfish/v1/Systems", "HTTP 503"}, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s := start(t, redfishsim.Options{})
				d := open(t, s)
				s.Inject(tc.fault)
				st, err := d.Status(ctxT(t), "")
				assert.Equal(t, fence.StateUnknown, st)
				clean(t, err, s.HostPort(), tc.parts...)
				for _, is := range tc.is {
					assert.ErrorIs(t, err, is)
				}
				res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
				require.Error(t, err)
				assert.False(t, res.Fenced())
				assert.True(t, fence.IsNotDone(err))
				assert.Empty(t, s.Resets())
				assert.NotContains(t, err.Error(), secret)
			})
		}
	})

	t.Run("malformed reply while verifying", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s)
		_, err := d.Status(ctxT(t), "")
		require.NoError(t, err)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultBadJSON, Method: "GET"})
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{PowerTimeout: 100 * time.Millisecond}), fence.ActionOff)
		require.Error(t, err)
		assert.False(t, res.Fenced())
	})

	t.Run("timeout reading", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang, Method: "GET"})
		begin := time.Now()
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{IOTimeout: 300 * time.Millisecond}), fence.ActionOff)
		took := time.Since(begin)
		assert.Less(t, took, 300*time.Millisecond+time.Second, "the timeout took %v", took)
		assert.GreaterOrEqual(t, took, 300*time.Millisecond)
		assert.False(t, res.Fenced())
		clean(t, err, s.HostPort(), "GET /redfish/v1", "timed out after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, fence.IsNotDone(err))
	})

	t.Run("timeout without a deadline: the driver's own", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s, func(o *redfish.Options) { o.Timeout = 200 * time.Millisecond })
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang})
		begin := time.Now()
		_, err := d.Status(context.Background(), "")
		assert.Less(t, time.Since(begin), 200*time.Millisecond+time.Second)
		clean(t, err, s.HostPort(), "timed out after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("timeout of a reset: outcome unknown", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s)
		_, err := d.Status(ctxT(t), "")
		require.NoError(t, err)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang, Method: "POST"})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err = d.Set(ctx, "", fence.StateOff)
		clean(t, err, s.HostPort(), "POST /redfish/v1/Systems/1"+resetPath, "no reply: timed out after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, fence.IsNotDone(err), "the reset was sent: its outcome is unknown")
		assert.NotErrorIs(t, err, fence.ErrUnreachable)
	})

	t.Run("connection dropped after a reset: outcome unknown", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s)
		_, err := d.Status(ctxT(t), "")
		require.NoError(t, err)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultCloseConn, Method: "POST", Times: 1})
		err = d.Set(ctxT(t), "", fence.StateOff)
		clean(t, err, s.HostPort(), "POST /redfish/v1/Systems/1"+resetPath, "no reply")
		assert.False(t, fence.IsNotDone(err))
		assert.Equal(t, fence.StateOff, s.Truth("1"), "the reset was carried out")
		// The engine verifies it anyway.
		s.SetTruth("1", fence.StateOn)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultCloseConn, Method: "POST", Times: 1})
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
	})

	t.Run("canceled context: not sent", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := d.Set(ctx, "", fence.StateOff)
		assert.True(t, fence.IsNotDone(err))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, s.TotalRequests())
	})
}

func TestTLS(t *testing.T) {
	s := start(t, redfishsim.Options{})

	t.Run("verified by default", func(t *testing.T) {
		d := open(t, s, func(o *redfish.Options) { o.RootCAs = nil })
		_, err := d.Status(ctxT(t), "")
		clean(t, err, s.HostPort(), "TLS certificate not trusted", "ssl_ca_file", "ssl_insecure")
		assert.ErrorIs(t, err, fence.ErrUnreachable)
		err = d.Set(ctxT(t), "1", fence.StateOff)
		assert.True(t, fence.IsNotDone(err))
		assert.Zero(t, s.TotalRequests(), "a request went to an untrusted service")
	})

	t.Run("CA bundle", func(t *testing.T) {
		ca, err := s.WriteCA(t.TempDir())
		require.NoError(t, err)
		p := fence.NewParams("address", s.Address(), "username", s.Username(), "password", s.Password(), "ssl_ca_file", ca)
		a, _, _ := fence.AddressFromParams(p)
		o, err := redfish.OptionsFromParams(a, p)
		require.NoError(t, err)
		d, err := redfish.New(o)
		require.NoError(t, err)
		defer d.Close()
		_, err = d.Status(ctxT(t), "")
		require.NoError(t, err)
	})

	t.Run("insecure when asked", func(t *testing.T) {
		d := open(t, s, func(o *redfish.Options) { o.RootCAs, o.InsecureSkipVerify = nil, true })
		_, err := d.Status(ctxT(t), "")
		require.NoError(t, err)
	})

	t.Run("https to a plain HTTP service", func(t *testing.T) {
		h := start(t, redfishsim.Options{PlainHTTP: true})
		d := open(t, h, func(o *redfish.Options) { o.Endpoint = "https://" + h.HostPort() })
		_, err := d.Status(ctxT(t), "")
		clean(t, err, h.HostPort(), "TLS handshake failed")
	})

	t.Run("plain HTTP when explicit", func(t *testing.T) {
		h := start(t, redfishsim.Options{PlainHTTP: true})
		assert.True(t, strings.HasPrefix(h.Address(), "redfish+http://"))
		d := open(t, h)
		res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
	})
}

func TestSession(t *testing.T) {
	s := start(t, redfishsim.Options{SessionOnly: true})
	d, err := redfish.New(redfish.Options{Endpoint: s.URL(), Username: s.Username(), Password: fence.NewSecret(s.Password()),
		RootCAs: s.CertPool(), Auth: redfish.AuthSession})
	require.NoError(t, err)
	res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, 1, s.Sessions())
	assert.Equal(t, 1, s.Requests("POST", "/redfish/v1/SessionService/Sessions"))

	// The service drops the session: the driver logs in again, once.
	s.DropSessions()
	s.SetTruth("1", fence.StateOn)
	res, err = fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, 2, s.Requests("POST", "/redfish/v1/SessionService/Sessions"))
	assert.Equal(t, 1, s.Sessions())

	// Close deletes the session.
	require.NoError(t, d.Close())
	assert.Equal(t, 0, s.Sessions())
	assert.Equal(t, 1, s.Requests("DELETE", "/redfish/v1/SessionService/Sessions/2"))
	require.NoError(t, d.Close(), "a second Close")
	_, err = d.Status(ctxT(t), "")
	assert.ErrorIs(t, err, redfish.ErrClosed)
	err = d.Set(ctxT(t), "", fence.StateOn)
	assert.ErrorIs(t, err, redfish.ErrClosed)
	assert.True(t, fence.IsNotDone(err))

	t.Run("Close is bounded", func(t *testing.T) {
		s := start(t, redfishsim.Options{})
		d := open(t, s, func(o *redfish.Options) { o.Auth = redfish.AuthSession })
		_, err := d.Status(ctxT(t), "")
		require.NoError(t, err)
		s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang, Method: "DELETE"})
		begin := time.Now()
		err = d.Close()
		assert.Less(t, time.Since(begin), 3*time.Second)
		assert.Error(t, err)
	})
}

// TestRequestsPerVerifiedOff counts the HTTP requests and connections of
// verified offs: discovery once, then the protocol's minimum, a status
// GET, the reset POST and a confirming GET, on one kept-alive connection.
func TestRequestsPerVerifiedOff(t *testing.T) {
	sys := "/redfish/v1/Systems/1"
	reset := sys + resetPath
	tests := []struct {
		name  string
		mod   func(*redfish.Options)
		first map[string]int
	}{
		{"discovery", nil, map[string]int{"GET /redfish/v1": 1, "GET /redfish/v1/Systems": 1, "GET " + sys: 2, "POST " + reset: 1}},
		{"systems_uri", func(o *redfish.Options) { o.SystemsURI = sys }, map[string]int{"GET " + sys: 2, "POST " + reset: 1}},
		{"session", func(o *redfish.Options) { o.SystemsURI, o.Auth = sys, redfish.AuthSession },
			map[string]int{"GET /redfish/v1": 1, "POST /redfish/v1/SessionService/Sessions": 1, "GET " + sys: 2, "POST " + reset: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, redfishsim.Options{})
			var mods []func(*redfish.Options)
			if tc.mod != nil {
				mods = append(mods, tc.mod)
			}
			d := open(t, s, mods...)
			m := method(d, "", fence.Options{})
			_, err := fence.Do(ctxT(t), m, fence.ActionOff)
			require.NoError(t, err)
			assert.Equal(t, tc.first, s.RequestCounts(), "first verified off")
			for range 3 {
				s.SetTruth("1", fence.StateOn)
				s.ResetCounters()
				before := d.Requests()
				res, err := fence.Do(ctxT(t), m, fence.ActionOff)
				require.NoError(t, err)
				require.True(t, res.Fenced())
				assert.Equal(t, map[string]int{"GET " + sys: 2, "POST " + reset: 1}, s.RequestCounts(), "later verified off")
				assert.Equal(t, 3, s.TotalRequests())
				assert.Equal(t, uint64(3), d.Requests()-before)
				assert.Zero(t, s.Connections(), "a new connection")
			}
		})
	}
}

func TestAbsoluteTarget(t *testing.T) {
	s := start(t, redfishsim.Options{AbsoluteTargets: true, ResetStatus: 202})
	d := open(t, s)
	res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, 1, s.Requests("POST", s.SystemURI("1")+resetPath))
}

func TestList(t *testing.T) {
	s := start(t, redfishsim.Options{Systems: []redfishsim.System{{ID: "A", Name: "node-a"}, {ID: "B", PowerState: "Off"}, {ID: "C", PowerState: "PoweringOn"}}})
	d := open(t, s)
	plugs, err := d.List(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []fence.Plug{
		{ID: "A", Name: "node-a", State: fence.StateOn},
		{ID: "B", Name: "System B", State: fence.StateOff},
		{ID: "C", Name: "System C", State: fence.StateUnknown},
	}, plugs)
	res, err := fence.Do(ctxT(t), method(d, "", fence.Options{}), fence.ActionList)
	require.NoError(t, err)
	assert.Len(t, res.Plugs, 3)
}

func TestMonitor(t *testing.T) {
	s := start(t, redfishsim.Options{})
	d := open(t, s)
	require.NoError(t, d.Monitor(ctxT(t)))
	assert.Equal(t, 1, s.Requests("GET", "/redfish/v1"))
	assert.Equal(t, 1, s.Requests("GET", "/redfish/v1/Systems/1"))

	s.SetPowerState("1", "PoweringOn")
	assert.NoError(t, d.Monitor(ctxT(t)), "a system switching is healthy")

	s.Inject(redfishsim.Fault{Kind: redfishsim.FaultNoPowerState})
	err := d.Monitor(ctxT(t))
	clean(t, err, s.HostPort(), "PowerState")
	s.ClearFaults()

	bad := open(t, s, func(o *redfish.Options) { o.Password = fence.NewSecret("wrong") })
	err = bad.Monitor(ctxT(t))
	assert.ErrorIs(t, err, fence.ErrLoginDenied)
	_, err = fence.Do(ctxT(t), method(bad, "", fence.Options{}), fence.ActionMonitor)
	assert.ErrorIs(t, err, fence.ErrLoginDenied)
}
