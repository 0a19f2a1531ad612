package snmppdu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmpsim"
	"github.com/fencekit/fencekit/internal/testtool"
)

// Secrets that no error may ever hold.
const (
	community = "Qz7-c0mmunity-s3cret"
	authPass  = "Qz7-auth-s3cret"
	privPass  = "Qz7-priv-s3cret"
)

// users of the simulators of these tests: one per security level, and the
// protocols of SNMPv3.
var users = []snmpsim.User{
	{Name: "sha-aes", Auth: "SHA", AuthPassword: authPass, Priv: "AES", PrivPassword: privPass},
	{Name: "md5-des", Auth: "MD5", AuthPassword: authPass, Priv: "DES", PrivPassword: privPass},
	{Name: "sha224-aes192", Auth: "SHA-224", AuthPassword: authPass, Priv: "AES-192", PrivPassword: privPass},
	{Name: "sha256-aes256", Auth: "SHA-256", AuthPassword: authPass, Priv: "AES-256", PrivPassword: privPass},
	{Name: "sha384-aes", Auth: "SHA-384", AuthPassword: authPass, Priv: "AES", PrivPassword: privPass},
	{Name: "sha512-des", Auth: "SHA-512", AuthPassword: authPass, Priv: "DES", PrivPassword: privPass},
	{Name: "sha-auth", Auth: "SHA", AuthPassword: authPass},
	{Name: "noauth"},
}

// sim starts a simulator of m with these tests' credentials.
func sim(t testing.TB, o snmpsim.Options) *snmpsim.Sim {
	t.Helper()
	if o.Community == "" {
		o.Community = community
	}
	if o.Users == nil {
		o.Users = users
	}
	return snmpsim.Start(t, o)
}

// v2 and v3 configure a device for a simulator.
func v2(port int) Config {
	return Config{Host: snmpsim.Host, Port: port, Version: "2c", Community: fence.NewSecret(community), Timeout: 2 * time.Second}
}

func v3(port int) Config {
	return Config{Host: snmpsim.Host, Port: port, Version: "3", Username: "sha-aes", AuthProtocol: "SHA",
		AuthPassword: fence.NewSecret(authPass), PrivProtocol: "AES", PrivPassword: fence.NewSecret(privPass), Timeout: 2 * time.Second}
}

// open returns a device of models for c, closed when t ends.
func open(t testing.TB, models []Model, c Config) *Device {
	t.Helper()
	d, err := New("test", models, c)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func ctx(t testing.TB) context.Context { return testtool.Timeout(t, 30*time.Second) }

// noSecret checks that err holds no credential.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{community, authPass, privPass} {
		assert.NotContains(t, err.Error(), s)
	}
}

// Every SNMPv3 security level and protocol the driver offers, against
// net-snmp's snmpd.
func TestSNMPv3Protocols(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 2})
	for _, u := range users {
		t.Run(u.Name, func(t *testing.T) {
			c := Config{Host: snmpsim.Host, Port: s.Port, Version: "3", Username: u.Name, Timeout: 2 * time.Second}
			if u.Auth != "" {
				c.AuthProtocol, c.AuthPassword = u.Auth, fence.NewSecret(authPass)
			}
			if u.Priv != "" {
				c.PrivProtocol, c.PrivPassword = u.Priv, fence.NewSecret(privPass)
			}
			d := open(t, APCModels, c)
			require.NoError(t, d.Set(ctx(t), "2", fence.StateOff))
			st, err := d.Status(ctx(t), "2")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOff, st)
			require.NoError(t, d.Set(ctx(t), "2", fence.StateOn))
			truth, err := s.Truth("2")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOn, truth)
		})
	}
	// The security level follows from what is given.
	d := open(t, APCModels, Config{Host: snmpsim.Host, Port: s.Port, Version: "3", Username: "sha-auth", AuthProtocol: "sha", AuthPassword: fence.NewSecret(authPass)})
	assert.Equal(t, "authNoPriv", d.Config().SecurityLevel)
	_, err := d.Status(ctx(t), "1")
	require.NoError(t, err)
}

// One request per read and per write, once the model is known; SNMPv3's
// engine discovery and the model's detection come once per device.
func TestRequestsPerCall(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4})
	for _, c := range []Config{v2(s.Port), v3(s.Port)} {
		t.Run(c.Version, func(t *testing.T) {
			d := open(t, APCModels, c)
			_, err := d.Status(ctx(t), "1")
			require.NoError(t, err)
			first := d.Requests()
			assert.LessOrEqual(t, first, int64(3), "discovery (v3), sysObjectID, state")
			for i := range 5 {
				_, err := d.Status(ctx(t), "1")
				require.NoError(t, err)
				require.NoError(t, d.Set(ctx(t), "1", []fence.State{fence.StateOff, fence.StateOn}[i%2]))
			}
			assert.Equal(t, first+10, d.Requests(), "one GET per Status, one SET per Set")
			_, err = d.List(ctx(t))
			require.NoError(t, err)
			assert.Equal(t, first+11, d.Requests(), "one GETBULK for four outlets' states and names")
		})
	}
}

// A wrong community is dropped by snmpd without a word: a read fails with
// ErrNoReply and fence.ErrUnreachable within the configured timeout and
// retries, and names the device.
func TestWrongCommunity(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 2})
	c := v2(s.Port)
	c.Community, c.Timeout, c.Retries = fence.NewSecret("Qz7-wrong-"+community), 300*time.Millisecond, 1
	d := open(t, APCModels, c)
	start := time.Now()
	st, err := d.Status(ctx(t), "1")
	took := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, fence.StateUnknown, st)
	assert.ErrorIs(t, err, ErrNoReply)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.True(t, fence.IsNotDone(fence.NotDone(err)))
	assert.GreaterOrEqual(t, took, 550*time.Millisecond)
	assert.Less(t, took, 3*time.Second, "2 tries of 300 ms")
	assert.Contains(t, err.Error(), "test 127.0.0.1:"+strconv.Itoa(s.Port)+": GET sysObjectID")
	assert.Contains(t, err.Error(), "no reply within 600ms (2 tries of 300ms)")
	assert.Contains(t, err.Error(), "wrong community")
	noSecret(t, err)
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.True(t, e.Timeout())

	// A SET is sent once, and its lost reply leaves the outcome unknown.
	err = d.Set(ctx(t), "1", fence.StateOff)
	require.Error(t, err)
	// The model is not known yet: the read of sysObjectID failed, and no
	// SET was sent.
	assert.True(t, fence.IsNotDone(err), "%v", err)
	assert.ErrorIs(t, err, ErrNoReply)
}

// A wrong SNMPv3 passphrase, user or security level is refused at once
// with fence.ErrLoginDenied; a wrong privacy passphrase looks like a wrong
// community (the agent drops what it cannot decrypt).
func TestWrongV3Credentials(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 2})
	cases := []struct {
		name  string
		mod   func(*Config)
		login bool
		want  string
	}{
		{"auth passphrase", func(c *Config) { c.AuthPassword = fence.NewSecret("Qz7-wrong-auth") }, true, "usmStatsWrongDigests"},
		{"auth protocol", func(c *Config) { c.AuthProtocol = "MD5" }, true, "usmStatsWrongDigests"},
		{"user", func(c *Config) { c.Username = "nobody" }, true, "usmStatsUnknownUserNames"},
		{"level above the user's", func(c *Config) { c.Username = "sha-auth" }, true, "usmStatsUnsupportedSecLevels"},
		{"level below the access's", func(c *Config) { c.SecurityLevel = "authNoPriv" }, true, "authorizationError"},
		{"noauth user at authPriv", func(c *Config) { c.Username = "noauth" }, true, "usmStats"},
		{"priv passphrase", func(c *Config) { c.PrivPassword = fence.NewSecret("Qz7-wrong-priv") }, false, "wrong privacy passphrase"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := v3(s.Port)
			c.Timeout, c.Retries = time.Second, 1
			tc.mod(&c)
			d := open(t, APCModels, c)
			start := time.Now()
			_, err := d.Status(ctx(t), "1")
			took := time.Since(start)
			require.Error(t, err)
			noSecret(t, err)
			t.Log(err)
			if tc.login {
				assert.ErrorIs(t, err, fence.ErrLoginDenied)
				assert.True(t, fence.IsNotDone(err))
				assert.Less(t, took, time.Second, "refused at once, not after the timeout (2 tries of 1 s)")
			} else {
				assert.ErrorIs(t, err, ErrNoReply)
			}
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A user that may not write, and the read-only community: the SET is
// refused, surely not done, and the outlet is untouched.
func TestNoWriteAccess(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 2})
	for _, v := range []string{"1", "2c"} {
		c := v2(s.Port)
		c.Version, c.Community = v, fence.NewSecret(snmpsim.DefaultROCommunity)
		d := open(t, EatonModels, c)
		st, err := d.Status(ctx(t), "2")
		require.NoError(t, err, "the read-only community reads")
		assert.Equal(t, fence.StateOn, st)
		err = d.Set(ctx(t), "2", fence.StateOff)
		require.Error(t, err)
		t.Log(err)
		assert.True(t, fence.IsNotDone(err), "%v", err)
		assert.NotErrorIs(t, err, fence.ErrUnknownPlug)
		truth, _ := s.Truth("2")
		assert.Equal(t, fence.StateOn, truth)
		if v == "2c" {
			assert.ErrorIs(t, err, fence.ErrLoginDenied)
			assert.Contains(t, err.Error(), "noAccess")
		} else {
			// SNMPv1 says noSuchName; the state read tells it from a
			// missing outlet.
			assert.Contains(t, err.Error(), "noSuchName")
		}
	}
}

// The safety case of fence_apc_snmp: a missing outlet reads
// noSuchInstance, which the agent takes for off. Here it is an unknown
// plug, for every version and model.
func TestMissingOutlet(t *testing.T) {
	for _, m := range []snmpsim.Model{snmpsim.APC, snmpsim.APCMasterSwitch, snmpsim.EatonManaged, snmpsim.EatonSwitched} {
		t.Run(m.String(), func(t *testing.T) {
			s := sim(t, snmpsim.Options{Model: m, Outlets: 4})
			models := APCModels
			if strings.HasPrefix(m.String(), "eaton") {
				models = EatonModels
			}
			for _, c := range []Config{v2(s.Port), v3(s.Port), func() Config { c := v2(s.Port); c.Version = "1"; return c }()} {
				d := open(t, models, c)
				for _, plug := range []string{"5", "20", "0", "10000"} {
					st, err := d.Status(ctx(t), plug)
					require.Error(t, err, "plug %s", plug)
					assert.ErrorIs(t, err, fence.ErrUnknownPlug, "v%s plug %s", c.Version, plug)
					assert.Equal(t, fence.StateUnknown, st)
					err = d.Set(ctx(t), plug, fence.StateOff)
					require.Error(t, err)
					assert.ErrorIs(t, err, fence.ErrUnknownPlug, "v%s plug %s: %v", c.Version, plug, err)
					assert.True(t, fence.IsNotDone(err))
				}
				res, err := fence.Do(ctx(t), &fence.Method{Name: "m", Device: d, Plug: "20"}, fence.ActionOff)
				require.Error(t, err)
				assert.False(t, res.Fenced(), "never a success")
				assert.ErrorIs(t, err, fence.ErrUnknownPlug)
			}
		})
	}
}

// Values outside the model's mapping are no state, and never a success.
func TestValueOutsideMapping(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.EatonManaged, Outlets: 3})
	d := open(t, EatonModels, v2(s.Port))
	for _, v := range []int{2, 3, -1, 255} {
		require.NoError(t, s.SetRaw(2, v))
		st, err := d.Status(ctx(t), "2")
		require.Error(t, err)
		assert.Equal(t, fence.StateUnknown, st)
		assert.ErrorIs(t, err, fence.ErrBadState)
		assert.Contains(t, err.Error(), fmt.Sprintf("value %d is neither on (1) nor off (0) for the Eaton Managed ePDU", v))
		m := &fence.Method{Name: "m", Device: d, Plug: "2", Options: fence.Options{PowerTimeout: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond}}
		res, err := fence.Do(ctx(t), m, fence.ActionOff)
		require.Error(t, err)
		assert.False(t, res.Fenced())
	}
	plugs, err := d.List(ctx(t))
	require.NoError(t, err)
	require.Len(t, plugs, 3)
	assert.Equal(t, fence.StateUnknown, plugs[1].State, "List reports the odd value as unknown")

	// The Switched ePDU's 0 means no such outlet: Status says so, List
	// leaves it out.
	sw := sim(t, snmpsim.Options{Model: snmpsim.EatonSwitched, Outlets: 3})
	d = open(t, EatonModels, v2(sw.Port))
	require.NoError(t, sw.SetRaw(3, 0))
	_, err = d.Status(ctx(t), "3")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	plugs, err = d.List(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []fence.Plug{{ID: "1", Name: "1", State: fence.StateOn}, {ID: "2", Name: "2", State: fence.StateOn}}, plugs)
}

// A sysObjectID of no known model is a clear error at once; pdu_model
// chooses the table instead.
func TestUnknownModel(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 2, SysObjectID: ".1.3.6.1.4.1.318.1.3.4.99"})
	d := open(t, APCModels, v2(s.Port))
	start := time.Now()
	_, err := d.Status(ctx(t), "1")
	require.Error(t, err)
	assert.Less(t, time.Since(start), time.Second)
	assert.ErrorIs(t, err, ErrUnknownModel)
	assert.ErrorIs(t, err, fence.ErrUnsupported)
	assert.True(t, fence.IsNotDone(err))
	assert.Contains(t, err.Error(), "sysObjectID .1.3.6.1.4.1.318.1.3.4.99 is none of the test driver's models")
	assert.Contains(t, err.Error(), "pdu_model")
	err = d.Set(ctx(t), "1", fence.StateOff)
	assert.ErrorIs(t, err, ErrUnknownModel)
	truth, _ := s.Truth("1")
	assert.Equal(t, fence.StateOn, truth, "nothing was written")
	assert.ErrorIs(t, d.Monitor(ctx(t)), ErrUnknownModel)
	_, err = d.List(ctx(t))
	assert.ErrorIs(t, err, ErrUnknownModel)

	c := v2(s.Port)
	c.Model = "RPDU"
	d = open(t, APCModels, c)
	require.NoError(t, d.Set(ctx(t), "1", fence.StateOff))
	st, err := d.Status(ctx(t), "1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	require.NoError(t, d.Monitor(ctx(t)))

	// An Eaton driver on an APC PDU.
	apc := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 2})
	d = open(t, EatonModels, v2(apc.Port))
	_, err = d.Status(ctx(t), "1")
	assert.ErrorIs(t, err, ErrUnknownModel)
}

// Outlets by name: found by a walk of the names, checked at every use,
// found again after a rename; duplicates are refused.
func TestOutletNames(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4, Names: map[int]string{1: "db-1", 2: "web 2", 3: "dup", 4: "dup"}})
	for _, c := range []Config{v2(s.Port), v3(s.Port), func() Config { c := v2(s.Port); c.Version = "1"; return c }()} {
		t.Run(c.Version, func(t *testing.T) {
			require.NoError(t, s.SetName(1, "db-1"))
			require.NoError(t, s.SetName(2, "web 2"))
			d := open(t, APCModels, c)
			require.NoError(t, d.Set(ctx(t), "web 2", fence.StateOff))
			truth, _ := s.Truth("2")
			assert.Equal(t, fence.StateOff, truth)
			st, err := d.Status(ctx(t), "web 2")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOff, st)
			require.NoError(t, d.Set(ctx(t), "web 2", fence.StateOn))

			_, err = d.Status(ctx(t), "dup")
			assert.ErrorIs(t, err, fence.ErrUnknownPlug)
			assert.Contains(t, err.Error(), "outlets 3, 4 have that name")
			_, err = d.Status(ctx(t), "nosuch")
			assert.ErrorIs(t, err, fence.ErrUnknownPlug)
			assert.Contains(t, err.Error(), `outlet named "nosuch"`)

			// Renamed behind the device's back: the old name is gone,
			// the new one found.
			require.NoError(t, s.SetName(2, "web-2b"))
			require.NoError(t, s.SetName(1, "web 2"))
			st, err = d.Status(ctx(t), "web 2")
			require.NoError(t, err)
			require.NoError(t, d.Set(ctx(t), "web 2", fence.StateOff))
			t1, _ := s.Truth("1")
			t2, _ := s.Truth("2")
			assert.Equal(t, fence.StateOff, t1, "the outlet that has the name now")
			assert.Equal(t, fence.StateOn, t2, "not the one that had it")
			require.NoError(t, s.SetName(1, "db-1"))
			err = d.Set(ctx(t), "web 2", fence.StateOn)
			assert.ErrorIs(t, err, fence.ErrUnknownPlug, "the name is gone")
			require.NoError(t, s.SetTruth("1", fence.StateOn))

			plugs, err := d.List(ctx(t))
			require.NoError(t, err)
			assert.Equal(t, []fence.Plug{{ID: "1", Name: "db-1", State: fence.StateOn}, {ID: "2", Name: "web-2b", State: fence.StateOn},
				{ID: "3", Name: "dup", State: fence.StateOn}, {ID: "4", Name: "dup", State: fence.StateOn}}, plugs)
			_ = st
		})
	}
	// The Eaton models have no names.
	e := sim(t, snmpsim.Options{Model: snmpsim.EatonManaged, Outlets: 2})
	d := open(t, EatonModels, v2(e.Port))
	_, err := d.Status(ctx(t), "node1")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.Contains(t, err.Error(), "has no outlet names")
}

// A SET whose reply comes too late: sent once, never again, and the
// outcome is unknown; the outlet did switch.
func TestSetReplyLost(t *testing.T) {
	s := sim(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 2})
	c := v2(s.Port)
	c.Timeout, c.Retries = 400*time.Millisecond, 3
	d := open(t, APCModels, c)
	_, err := d.Status(ctx(t), "1")
	require.NoError(t, err)
	require.NoError(t, s.SetDelay(1800*time.Millisecond))
	start := time.Now()
	err = d.Set(ctx(t), "1", fence.StateOff)
	took := time.Since(start)
	require.Error(t, err)
	t.Log(err)
	assert.True(t, fence.IsOutcomeUnknown(err))
	assert.ErrorIs(t, err, fence.ErrOutcomeUnknown)
	assert.ErrorIs(t, err, ErrNoReply)
	assert.NotErrorIs(t, err, fence.ErrUnreachable, "the device may well have been reached")
	assert.Less(t, took, 1500*time.Millisecond, "one try of 400 ms, not four")
	require.NoError(t, s.SetDelay(0))
	time.Sleep(2 * time.Second) // the late reply arrives, and is dropped
	_, n, err := s.Sets()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the SET was sent once")
	truth, _ := s.Truth("1")
	assert.Equal(t, fence.StateOff, truth)
	st, err := d.Status(ctx(t), "1")
	require.NoError(t, err, "the device still works; the late reply is not taken for this one")
	assert.Equal(t, fence.StateOff, st)
}

// A context that ends stops a call at once, even within a request's
// timeout; one already done sends nothing.
func TestContext(t *testing.T) {
	r, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.APC, Community: community})
	require.NoError(t, err)
	defer r.Close()
	c := v2(r.Port)
	c.Timeout, c.Retries = 5*time.Second, 2
	d := open(t, APCModels, c)
	_, err = d.Status(ctx(t), "1")
	require.NoError(t, err)
	r.Drop(true)
	cc, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = d.Status(cc, "1")
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 2*time.Second)

	dl, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = d.Set(dl, "1", fence.StateOff)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, fence.IsOutcomeUnknown(err), "sent, no reply")
	assert.Less(t, time.Since(start), 2*time.Second)

	done, cancel := context.WithCancel(context.Background())
	cancel()
	before := r.Requests()
	err = d.Set(done, "1", fence.StateOff)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, fence.IsNotDone(err))
	assert.Equal(t, before, r.Requests(), "nothing sent")
}

// Close ends a call in progress, and later calls fail.
func TestClose(t *testing.T) {
	r, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.APC, Community: community})
	require.NoError(t, err)
	defer r.Close()
	c := v2(r.Port)
	c.Timeout = 10 * time.Second
	d, err := New("test", APCModels, c)
	require.NoError(t, err)
	_, err = d.Status(ctx(t), "1")
	require.NoError(t, err)
	r.Drop(true)
	var wg sync.WaitGroup
	var callErr error
	wg.Go(func() { _, callErr = d.Status(ctx(t), "1") })
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	require.NoError(t, d.Close())
	wg.Wait()
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.ErrorIs(t, callErr, ErrClosed)
	_, err = d.Status(ctx(t), "1")
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, d.Close())
}

// Nothing listens: the ICMP port unreachable fails the call at once.
func TestNothingListens(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	c := v2(port)
	c.Timeout = 5 * time.Second
	d := open(t, APCModels, c)
	start := time.Now()
	_, err = d.Status(ctx(t), "1")
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Contains(t, err.Error(), "connection refused")
}

// Another device at the address: noticed by the next read, which fails;
// the one after detects the new device.
func TestDeviceChanged(t *testing.T) {
	r, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.APC, Community: community})
	require.NoError(t, err)
	defer r.Close()
	d := open(t, APCModels, v2(r.Port))
	_, err = d.Status(ctx(t), "1")
	require.NoError(t, err)
	r.SetSysObjectID(".1.3.6.1.4.1.318.1.3.4.2")
	_, err = d.Status(ctx(t), "1")
	require.ErrorIs(t, err, ErrDeviceChanged)
	assert.True(t, fence.IsNotDone(err))
	_, err = d.Status(ctx(t), "1")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug, "now a MasterSwitch, whose table the responder lacks")
	r.SetSysObjectID(".1.3.6.1.4.1.318.1.3.4.5")
	assert.ErrorIs(t, d.Monitor(ctx(t)), ErrDeviceChanged)
	require.NoError(t, d.Monitor(ctx(t)))
	m, err := d.Model(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, ModelAPCRPDU, m.ID)
}

// Whatever a device answers for an outlet's state, the driver reports on
// or off only for the model's values, as an INTEGER of that very object.
func FuzzReply(f *testing.F) {
	r, err := snmpsim.NewResponder(snmpsim.Options{Model: snmpsim.APC, Community: community, Outlets: 2})
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	d, err := New("fuzz", APCModels, Config{Host: snmpsim.Host, Port: r.Port, Version: "2c", Community: fence.NewSecret(community), Timeout: 50 * time.Millisecond, Retries: NoRetry})
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	f.Add(uint8(gosnmp.Integer), int64(1), "", false)
	f.Add(uint8(gosnmp.Integer), int64(2), "", false)
	f.Add(uint8(gosnmp.Integer), int64(3), "", false)
	f.Add(uint8(gosnmp.OctetString), int64(0), "1", false)
	f.Add(uint8(gosnmp.NoSuchInstance), int64(0), "", false)
	f.Add(uint8(gosnmp.Integer), int64(1), ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.2", true)
	f.Fuzz(func(t *testing.T, typ uint8, v int64, s string, rename bool) {
		status := ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.1"
		r.Tamper(func(req gosnmp.PDUType, vars []gosnmp.SnmpPDU) []gosnmp.SnmpPDU {
			for i := range vars {
				if normOID(vars[i].Name) != status {
					continue
				}
				vars[i].Type = gosnmp.Asn1BER(typ)
				switch vars[i].Type {
				case gosnmp.OctetString, gosnmp.ObjectIdentifier, gosnmp.IPAddress:
					vars[i].Value = s
				case gosnmp.Counter32, gosnmp.Gauge32, gosnmp.TimeTicks, gosnmp.Uinteger32:
					vars[i].Value = uint32(v)
				case gosnmp.Counter64:
					vars[i].Value = uint64(v)
				default:
					vars[i].Value = int(v)
				}
				if rename {
					vars[i].Name = s
				}
			}
			return vars
		})
		defer r.Tamper(nil)
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := d.Status(c, "1")
		if err != nil {
			if st != fence.StateUnknown {
				t.Fatalf("state %v with error %v", st, err)
			}
			return
		}
		okType := gosnmp.Asn1BER(typ) == gosnmp.Integer || gosnmp.Asn1BER(typ) == gosnmp.Gauge32 ||
			gosnmp.Asn1BER(typ) == gosnmp.Counter32 || gosnmp.Asn1BER(typ) == gosnmp.Uinteger32 || gosnmp.Asn1BER(typ) == gosnmp.TimeTicks
		want := map[int64]fence.State{1: fence.StateOn, 2: fence.StateOff}
		if !okType || (rename && normOID(s) != status) {
			t.Fatalf("type %v value %v name %q: state %v and no error", typ, v, s, st)
		}
		if w, ok := want[v]; !ok || w != st {
			if x := uint32(v); !(gosnmp.Asn1BER(typ) != gosnmp.Integer && want[int64(x)] == st) {
				t.Fatalf("type %v value %d: state %v", typ, v, st)
			}
		}
	})
}
