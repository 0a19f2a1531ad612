package snmpsim

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

// client returns a gosnmp client of s with the read-write community.
func client(t *testing.T, s *Sim, community string) *gosnmp.GoSNMP {
	t.Helper()
	g := &gosnmp.GoSNMP{Target: Host, Port: uint16(s.Port), Community: community, Version: gosnmp.Version2c,
		Timeout: 2 * time.Second, Retries: 1, Context: context.Background()}
	require.NoError(t, g.Connect())
	t.Cleanup(func() { g.Conn.Close() })
	return g
}

// Each model: sysObjectID, a SET of an outlet's command switches its
// state object, and the state file follows.
func TestModels(t *testing.T) {
	type tc struct {
		model           Model
		state, control  func(n int) string
		on, off         int
		turnOn, turnOff int
	}
	cases := []tc{
		{APC, func(n int) string { return ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4." + strconv.Itoa(n) },
			func(n int) string { return ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4." + strconv.Itoa(n) }, 1, 2, 1, 2},
		{APCMasterSwitch, func(n int) string { return ".1.3.6.1.4.1.318.1.1.4.4.2.1.3." + strconv.Itoa(n) },
			func(n int) string { return ".1.3.6.1.4.1.318.1.1.4.4.2.1.3." + strconv.Itoa(n) }, 1, 2, 1, 2},
		{APCRPDU2, func(n int) string { return ".1.3.6.1.4.1.318.1.1.4.4.2.1.3." + strconv.Itoa(n) },
			func(n int) string { return ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4." + strconv.Itoa(n) }, 1, 2, 1, 2},
		{EatonManaged, func(n int) string { return ".1.3.6.1.4.1.534.6.6.6.1.2.2.1.3." + strconv.Itoa(n-1) },
			func(n int) string { return ".1.3.6.1.4.1.534.6.6.6.1.2.2.1.3." + strconv.Itoa(n-1) }, 1, 0, 1, 0},
		{EatonSwitched, func(n int) string { return ".1.3.6.1.4.1.20677.2.6.3." + strconv.Itoa(n) + ".0" },
			func(n int) string { return ".1.3.6.1.4.1.20677.2.6.2." + strconv.Itoa(n+1) + ".0" }, 1, 2, 1, 2},
		{Tripplite, func(n int) string { return ".1.3.6.1.4.1.850.10.2.3.5.1.2.1." + strconv.Itoa(n) },
			func(n int) string { return ".1.3.6.1.4.1.850.10.2.3.5.1.4.1." + strconv.Itoa(n) }, 2, 1, 2, 1},
		{TrippliteLX, func(n int) string { return ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1.4.1." + strconv.Itoa(n) },
			func(n int) string { return ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1.6.1." + strconv.Itoa(n) }, 2, 1, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.model.String(), func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Model: c.model, Outlets: 4})
			g := client(t, s, DefaultCommunity)
			res, err := g.Get([]string{".1.3.6.1.2.1.1.2.0", c.state(3)})
			require.NoError(t, err)
			assert.Equal(t, c.model.SysObjectID(), res.Variables[0].Value)
			assert.Equal(t, c.on, res.Variables[1].Value)

			res, err = g.Set([]gosnmp.SnmpPDU{{Name: c.control(3), Type: gosnmp.Integer, Value: c.turnOff}})
			require.NoError(t, err)
			require.Equal(t, gosnmp.NoError, res.Error)
			st, err := s.Truth("3")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOff, st)
			res, err = g.Get([]string{c.state(3), c.state(2)})
			require.NoError(t, err)
			assert.Equal(t, c.off, res.Variables[0].Value)
			assert.Equal(t, c.on, res.Variables[1].Value, "the other outlets stay")

			require.NoError(t, s.SetTruth("3", fence.StateOn))
			res, err = g.Get([]string{c.state(3)})
			require.NoError(t, err)
			assert.Equal(t, c.on, res.Variables[0].Value)

			require.NoError(t, s.SetRaw(3, 7))
			res, err = g.Get([]string{c.state(3)})
			require.NoError(t, err)
			assert.Equal(t, 7, res.Variables[0].Value)

			// A missing outlet, a bad value, a write to a state that is
			// not a command, the read-only community.
			res, err = g.Get([]string{c.state(5)})
			require.NoError(t, err)
			assert.Equal(t, gosnmp.NoSuchInstance, res.Variables[0].Type)
			res, err = g.Set([]gosnmp.SnmpPDU{{Name: c.control(2), Type: gosnmp.Integer, Value: 9}})
			require.NoError(t, err)
			assert.Equal(t, gosnmp.WrongValue, res.Error)
			res, err = g.Set([]gosnmp.SnmpPDU{{Name: c.control(5), Type: gosnmp.Integer, Value: c.turnOn}})
			require.NoError(t, err)
			assert.NotEqual(t, gosnmp.NoError, res.Error)
			ro := client(t, s, DefaultROCommunity)
			res, err = ro.Set([]gosnmp.SnmpPDU{{Name: c.control(2), Type: gosnmp.Integer, Value: c.turnOff}})
			require.NoError(t, err)
			assert.Equal(t, gosnmp.NoAccess, res.Error)
			st, err = s.Truth("2")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOn, st)

			sets, n, err := s.Sets()
			require.NoError(t, err)
			assert.Equal(t, 2, n, "SETs that reached the handler (snmpd refuses a SET of a missing object itself): %v", sets)
		})
	}
}

func TestNamesAndV3(t *testing.T) {
	s := Start(t, Options{Model: APC, Outlets: 3, Names: map[int]string{2: "web-2"}, Users: []User{
		{Name: "md5des", Auth: "MD5", AuthPassword: "authpass1", Priv: "DES", PrivPassword: "privpass1"},
		{Name: "sha512", Auth: "SHA-512", AuthPassword: "authpass1"},
	}})
	g := client(t, s, DefaultROCommunity)
	res, err := g.Get([]string{".1.3.6.1.4.1.318.1.1.12.3.5.1.1.2.1", ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.2.2"})
	require.NoError(t, err)
	assert.Equal(t, []byte("node1"), res.Variables[0].Value)
	assert.Equal(t, []byte("web-2"), res.Variables[1].Value)
	require.NoError(t, s.SetName(1, "db 1"))
	res, err = g.Get([]string{".1.3.6.1.4.1.318.1.1.12.3.5.1.1.2.1"})
	require.NoError(t, err)
	assert.Equal(t, []byte("db 1"), res.Variables[0].Value)

	for _, u := range []struct {
		user  string
		flags gosnmp.SnmpV3MsgFlags
		auth  gosnmp.SnmpV3AuthProtocol
		priv  gosnmp.SnmpV3PrivProtocol
	}{{"md5des", gosnmp.AuthPriv, gosnmp.MD5, gosnmp.DES}, {"sha512", gosnmp.AuthNoPriv, gosnmp.SHA512, gosnmp.NoPriv}} {
		v3 := &gosnmp.GoSNMP{Target: Host, Port: uint16(s.Port), Version: gosnmp.Version3, Timeout: 2 * time.Second,
			SecurityModel: gosnmp.UserSecurityModel, MsgFlags: u.flags, Context: context.Background(),
			SecurityParameters: &gosnmp.UsmSecurityParameters{UserName: u.user, AuthenticationProtocol: u.auth,
				AuthenticationPassphrase: "authpass1", PrivacyProtocol: u.priv, PrivacyPassphrase: "privpass1"}}
		require.NoError(t, v3.Connect())
		res, err := v3.Set([]gosnmp.SnmpPDU{{Name: ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.3", Type: gosnmp.Integer, Value: 2}})
		v3.Conn.Close()
		require.NoError(t, err, u.user)
		assert.Equal(t, gosnmp.NoError, res.Error, u.user)
		st, err := s.Truth("3")
		require.NoError(t, err)
		assert.Equal(t, fence.StateOff, st)
		require.NoError(t, s.SetTruth("3", fence.StateOn))
	}
}

// A delayed SET answer: the change is made at once, the answer comes late.
func TestSetDelay(t *testing.T) {
	s := Start(t, Options{Model: EatonSwitched, Outlets: 2})
	require.NoError(t, s.SetDelay(600*time.Millisecond))
	g := client(t, s, DefaultCommunity)
	g.Timeout, g.Retries = 200*time.Millisecond, 0
	_, err := g.Set([]gosnmp.SnmpPDU{{Name: ".1.3.6.1.4.1.20677.2.6.2.2.0", Type: gosnmp.Integer, Value: 2}})
	require.Error(t, err)
	st, err := s.Truth("1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	_, n, err := s.Sets()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestStop(t *testing.T) {
	s := Start(t, Options{})
	s.Stop()
	s.Stop()
	select {
	case <-s.exited:
	default:
		t.Fatal("snmpd still runs after Stop")
	}
	assert.True(t, udpPortFree(s.Port))
}

// The in-process responder serves the same objects as the handler.
func TestResponder(t *testing.T) {
	for _, m := range []Model{APC, EatonSwitched, EatonManaged} {
		r, err := NewResponder(Options{Model: m, Outlets: 3})
		require.NoError(t, err)
		defer r.Close()
		for _, v := range []gosnmp.SnmpVersion{gosnmp.Version1, gosnmp.Version2c} {
			g := &gosnmp.GoSNMP{Target: Host, Port: uint16(r.Port), Community: DefaultCommunity, Version: v,
				Timeout: 2 * time.Second, Retries: 0, Context: context.Background()}
			require.NoError(t, g.Connect())
			res, err := g.Get([]string{".1.3.6.1.2.1.1.2.0"})
			require.NoError(t, err)
			assert.Equal(t, m.SysObjectID(), res.Variables[0].Value)
			all, err := g.WalkAll(".1.3.6.1.4.1")
			require.NoError(t, err, "%v %v", m, v)
			assert.NotEmpty(t, all)
			if v == gosnmp.Version2c {
				bulk, err := g.BulkWalkAll(".1.3.6.1.4.1")
				require.NoError(t, err)
				assert.Equal(t, len(all), len(bulk))
			}
			g.Conn.Close()
		}
	}
}
