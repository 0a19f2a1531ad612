package snmppdu

import (
	"errors"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Host: "pdu"}
	s, err := c.check(APCModels)
	require.NoError(t, err)
	assert.Equal(t, Config{Host: "pdu", Port: 161, Version: "1", Community: fence.NewSecret("private"), Timeout: time.Second, Retries: 2, Logger: c.Logger}, c)
	assert.Equal(t, gosnmp.Version1, s.version)
	assert.Nil(t, s.model)

	// SNMPv3: the security level follows from what is given, the protocols
	// default to net-snmp's.
	for _, tc := range []struct {
		c     Config
		level string
		flags gosnmp.SnmpV3MsgFlags
		auth  gosnmp.SnmpV3AuthProtocol
		priv  gosnmp.SnmpV3PrivProtocol
	}{
		{Config{Host: "h", Version: "3", Username: "u"}, "noAuthNoPriv", gosnmp.NoAuthNoPriv, gosnmp.NoAuth, gosnmp.NoPriv},
		{Config{Host: "h", Version: "3", Username: "u", AuthPassword: fence.NewSecret(authPass)}, "authNoPriv", gosnmp.AuthNoPriv, gosnmp.MD5, gosnmp.NoPriv},
		{Config{Host: "h", Version: "v3", Username: "u", AuthPassword: fence.NewSecret(authPass), PrivPassword: fence.NewSecret(privPass)}, "authPriv", gosnmp.AuthPriv, gosnmp.MD5, gosnmp.DES},
		{Config{Host: "h", Version: "3", Username: "u", AuthPassword: fence.NewSecret(authPass), PrivPassword: fence.NewSecret(privPass), SecurityLevel: "AUTHNOPRIV", AuthProtocol: "sha-512"}, "authNoPriv", gosnmp.AuthNoPriv, gosnmp.SHA512, gosnmp.NoPriv},
		{Config{Host: "h", Version: "3", Username: "u", AuthPassword: fence.NewSecret(authPass), PrivPassword: fence.NewSecret(privPass), AuthProtocol: "SHA1", PrivProtocol: "aes-256"}, "authPriv", gosnmp.AuthPriv, gosnmp.SHA, gosnmp.AES256},
		{Config{Host: "h", Version: "3", Username: "u", AuthPassword: fence.NewSecret(authPass), PrivPassword: fence.NewSecret(privPass), AuthProtocol: "SHA224", PrivProtocol: "AES192C"}, "authPriv", gosnmp.AuthPriv, gosnmp.SHA224, gosnmp.AES192C},
	} {
		s, err := tc.c.check(EatonModels)
		require.NoError(t, err)
		assert.Equal(t, tc.level, tc.c.SecurityLevel)
		assert.Equal(t, []any{tc.flags, tc.auth, tc.priv}, []any{s.flags, s.auth, s.priv})
	}
	c = Config{Host: "h", Model: " Switched ", Retries: NoRetry, Version: "2"}
	s, err = c.check(EatonModels)
	require.NoError(t, err)
	assert.Equal(t, ModelEatonSwitched, s.model.ID)
	assert.Equal(t, 0, c.Retries)
	assert.Equal(t, "2c", c.Version)
}

func TestConfigFromParams(t *testing.T) {
	a, err := fence.ParseAddress("apc://pdu-1:1161")
	require.NoError(t, err)
	p := fence.NewParams("snmp-version", "3", "login", "fence", "passwd", authPass, "snmp_priv_passwd", privPass,
		"snmp-auth-prot", "SHA", "snmp-priv-prot", "AES", "snmp-sec-level", "authPriv", "snmp_timeout", "0.5",
		"snmp_retries", "0", "pdu_model", "rpdu", "community", community)
	c, err := ConfigFromParams("apc", APCModels, a, p)
	require.NoError(t, err)
	assert.Equal(t, Config{Host: "pdu-1", Port: 1161, Version: "3", Community: fence.NewSecret(community), Username: "fence", SecurityLevel: "authPriv",
		AuthProtocol: "SHA", AuthPassword: fence.NewSecret(authPass), PrivProtocol: "AES", PrivPassword: fence.NewSecret(privPass), Timeout: 500 * time.Millisecond,
		Retries: NoRetry, Model: "rpdu"}, c)

	host := fence.Address{Host: "pdu"}
	for _, tc := range []struct {
		addr fence.Address
		kv   []string
		key  string
	}{
		{fence.Address{}, nil, "ip"},
		{fence.Address{Driver: "eaton", Host: "pdu"}, nil, "address"},
		{fence.Address{Driver: "apc", Transport: "tcp", Host: "pdu"}, nil, "address"},
		{fence.Address{Driver: "apc", Host: "pdu", Path: "/x"}, nil, "address"},
		{fence.Address{Host: "pdu", Port: 70000}, nil, "ipport"},
		{host, []string{"snmp_version", "4"}, "snmp_version"},
		{host, []string{"snmp_version", "3"}, "username"},
		{host, []string{"snmp_version", "3", "username", "u", "snmp_sec_level", "authNoPriv"}, "password"},
		{host, []string{"snmp_version", "3", "username", "u", "password", "short"}, "password"},
		{host, []string{"snmp_version", "3", "username", "u", "password", authPass, "snmp_auth_prot", "SHA3"}, "snmp_auth_prot"},
		{host, []string{"snmp_version", "3", "username", "u", "password", authPass, "snmp_sec_level", "authPriv"}, "snmp_priv_passwd"},
		{host, []string{"snmp_version", "3", "username", "u", "password", authPass, "snmp_priv_passwd", privPass, "snmp_priv_prot", "3DES"}, "snmp_priv_prot"},
		{host, []string{"snmp_version", "3", "username", "u", "snmp_sec_level", "paranoid"}, "snmp_sec_level"},
		{host, []string{"snmp_timeout", "soon"}, "snmp_timeout"},
		{host, []string{"snmp_timeout", "0"}, "snmp_timeout"},
		{host, []string{"snmp_retries", "11"}, "snmp_retries"},
		{host, []string{"snmp_retries", "x"}, "snmp_retries"},
		{host, []string{"pdu_model", "managed"}, "pdu_model"},
	} {
		_, err := ConfigFromParams("apc", APCModels, tc.addr, fence.NewParams(tc.kv...))
		var pe *fence.ParamError
		require.True(t, errors.As(err, &pe), "%v: %v", tc.kv, err)
		assert.Equal(t, tc.key, pe.Key, "%v: %v", tc.kv, err)
		assert.ErrorIs(t, err, fence.ErrConfig)
		assert.NotContains(t, err.Error(), authPass)
		assert.NotContains(t, err.Error(), privPass)
	}
}

func TestParams(t *testing.T) {
	specs := Params(APCModels)
	names := map[string]fence.ParamSpec{}
	for _, s := range specs {
		names[s.Name] = s
	}
	for _, k := range []string{"snmp_version", "community", "snmp_auth_prot", "snmp_sec_level", "snmp_priv_prot", "snmp_priv_passwd", "username", "password", "plug", "ipport"} {
		assert.Contains(t, names, k)
	}
	assert.True(t, names["community"].Secret)
	assert.True(t, names["snmp_priv_passwd"].Secret)
	assert.Equal(t, "1", names["snmp_version"].Default)
	assert.Equal(t, "private", names["community"].Default)
	assert.Equal(t, "161", names["ipport"].Default)
	assert.Contains(t, names["pdu_model"].Description, "rpdu, rpdu2, masterswitch, tripplite, tripplite-lx")
}

// SNMPv3 settings without snmp_version=3 (the design's Eaton template:
// snmp-sec-level=authPriv, snmp-priv-prot=AES, no snmp_version) are an
// error naming the setting, never a quiet SNMPv1 with community "private".
func TestSNMPv3SettingsWithoutVersion3(t *testing.T) {
	host := fence.Address{Host: "pdu"}
	for _, kv := range [][]string{
		{"snmp-sec-level", "authPriv", "snmp-priv-prot", "AES"},
		{"snmp_version", "2c", "snmp_auth_prot", "SHA"},
		{"snmp_version", "1", "snmp_priv_passwd", privPass},
	} {
		_, err := ConfigFromParams("eaton", EatonModels, host, fence.NewParams(kv...))
		require.Error(t, err, "%v", kv)
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, err.Error(), "snmp_version=3")
		assert.NotContains(t, err.Error(), privPass)
	}
	_, err := ConfigFromParams("eaton", EatonModels, host, fence.NewParams("snmp_version", "3", "username", "u", "password", authPass,
		"snmp_sec_level", "authNoPriv"))
	assert.NoError(t, err)
}
