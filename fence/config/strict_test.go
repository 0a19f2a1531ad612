package config_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// strictRegistry has one driver that declares its parameters, the
// options of its agent that it ignores, and a check of its own; every
// device it opens records its parameters in opened.
func strictRegistry(t *testing.T, opened *[]fence.Params) *fence.Registry {
	t.Helper()
	reg := fence.NewRegistry()
	require.NoError(t, reg.Register(fence.Driver{
		Name: "bmc", Agents: []string{"fence_bmc"},
		Params: []fence.ParamSpec{
			{Name: "cipher", Type: "integer"},
			{Name: "kg_key", Type: "string", Secret: true},
			{Name: "snmp_priv_passwd", Type: "string", Secret: true},
		},
		Ignored: []fence.ParamSpec{{Name: "ipmitool_path"}, {Name: "sudo", Type: "boolean"}},
		Check: func(_ fence.Address, p fence.Params) error {
			if v, _ := p.Get("cipher"); v == "0" {
				return &fence.ParamError{Key: "cipher", Value: v, Reason: "cipher suite 0 sends the password in clear"}
			}
			return nil
		},
		Open: func(_ context.Context, o fence.OpenOptions) (fence.Device, error) {
			if opened != nil {
				*opened = append(*opened, o.Params)
			}
			return stubDevice{}, nil
		},
	}))
	return reg
}

func strictCMs(method string) []config.ConfigMap {
	return []config.ConfigMap{
		cfgTemplate("bmcs", "driver=bmc\nusername=admin\npassword=template-pw"),
		cfgMethod("bmc-off", "n1", method),
		cfgNode("n1", "power_management=bmc-off"),
	}
}

func TestValidateKeys(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		key     string
		line    int
		contain []string
	}{
		{"a typo", "template=bmcs\nip=10.0.0.1\npasword=hunter2-pw", "pasword", 3, []string{"takes no parameter pasword", "did you mean password?"}},
		{"a transposition", "template=bmcs\nip=10.0.0.1\nciphre=3", "ciphre", 3, []string{"did you mean cipher?"}},
		{"parts reordered", "template=bmcs\nip=10.0.0.1\npriv_snmp_passwd=hunter2-pw", "priv_snmp_passwd", 3, []string{"did you mean snmp_priv_passwd?"}},
		// A key near no parameter may be part of a secret written on a line
		// of its own: named by its line, never repeated.
		{"nothing near", "template=bmcs\nip=10.0.0.1\ncolour=blue", "", 3, []string{"driver bmc takes no such parameter", "not repeated"}},
		{"a secret on a line of its own", "template=bmcs\nip=10.0.0.1\nHunter2-Pass=word", "", 3, []string{"takes no such parameter"}},
		{"a non-secret parameter from a Secret", "template=bmcs\nip=10.0.0.1\ncipher_secret=bmc/cipher", "cipher_secret", 3, []string{"cipher is not a secret parameter"}},
		{"a bad reference", "template=bmcs\nip=10.0.0.1\nkg_key_secret=no-slash", "kg_key_secret", 3, []string{"Secret that holds kg_key", "not a Secret's NAME/KEY"}},
		// A password typed where its reference goes is never repeated.
		{"a password for a reference", "template=bmcs\nip=10.0.0.1\npassword_secret=hunter2-pw", "password_secret", 3, []string{"Secret that holds password", "not shown"}},
		{"the driver's own check", "template=bmcs\nip=10.0.0.1\ncipher=0", "cipher", 3, []string{"cipher suite 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := strictRegistry(t, nil)
			cfg, err := config.Parse(strictCMs(tt.method))
			require.NoError(t, err)
			errs := cfgErrors(t, cfg.Validate(reg))
			require.Len(t, errs, 1, "%v", errs)
			e := errs[0]
			assert.Equal(t, "fence-method-bmc-off-n1", e.ConfigMap)
			assert.Equal(t, tt.key, e.Key)
			assert.Equal(t, tt.line, e.Line)
			assert.Equal(t, "n1", e.Node)
			for _, c := range tt.contain {
				assert.Contains(t, e.Error(), c)
			}
			assert.NotContains(t, e.Error(), "hunter2", "a value never shows")
			assert.NotContains(t, e.Error(), "template-pw")
			if strings.Contains(tt.name, "typo") {
				assert.ErrorIs(t, e, config.ErrUnknownParam)
				assert.ErrorIs(t, e, fence.ErrConfig)
			}
		})
	}
}

// What a configuration written for the agent holds is taken: the common
// parameters under the agents' names and aliases, the agent's options the
// driver ignores, the configuration's own keys, secret references.
func TestValidateKeysAccepted(t *testing.T) {
	reg := strictRegistry(t, nil)
	cfg, err := config.Parse(strictCMs("template=bmcs\nipaddr=10.0.0.1\nlogin=root\npasswd_secret=bmc-n1/password\n" +
		"ipmitool_path=/usr/bin/ipmitool\nsudo=1\npower_timeout=30\nmust_sucess=yes\nkg_key_secret=bmc-n1/kg\naction=off"))
	require.NoError(t, err)
	assert.NoError(t, cfg.Validate(reg))
}

// A reference and a value are one parameter: both in one ConfigMap is an
// error; a method's reference overrides its template's value.
func TestSecretReferenceIsItsParameter(t *testing.T) {
	_, err := config.Parse(strictCMs("template=bmcs\nip=10.0.0.1\npassword=x\npassword_secret=bmc/pw"))
	errs := cfgErrors(t, err)
	require.NotEmpty(t, errs)
	assert.Equal(t, "fence-method-bmc-off-n1", errs[0].ConfigMap)

	cfg, err := config.Parse(strictCMs("template=bmcs\nip=10.0.0.1\npassword_secret=bmc/pw"))
	require.NoError(t, err)
	_, p, err := cfg.MethodParams("n1", "bmc-off")
	require.NoError(t, err)
	_, hasValue := p["password"]
	assert.False(t, hasValue, "the template's password is overridden")
	assert.Equal(t, "bmc/pw", p["password_secret"])
}

// secrets is a SecretSource over a map of name/key to value.
type secrets map[string]string

func (s secrets) SecretValue(_ context.Context, ref config.SecretRef) (string, error) {
	v, ok := s[ref.String()]
	if !ok {
		return "", fmt.Errorf("Secret %s: %w", ref, config.ErrSecretNotFound)
	}
	return v, nil
}

func TestSecretReferencesResolvedOnOpen(t *testing.T) {
	var opened []fence.Params
	reg := strictRegistry(t, &opened)
	cfg, err := config.ParseFor(strictCMs("template=bmcs\nip=10.0.0.1\npassword_secret=bmc-n1/password\nsnmp_priv_passwd_secret=bmc-n1/priv"), reg)
	require.NoError(t, err)

	// Without a source: an error naming the ConfigMap, line and key.
	_, err = cfg.Levels(t.Context(), reg, "n1", fence.StepPowerManagement, nil)
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, config.ErrNoSecretSource)
	assert.Equal(t, "fence-method-bmc-off-n1", ce.ConfigMap)
	assert.Equal(t, "password_secret", ce.Key)
	assert.Equal(t, 3, ce.Line)
	assert.Empty(t, opened, "nothing opened")

	// A Secret without the key: the same, never the other values.
	src := secrets{"bmc-n1/password": "rotated-pw-1"}
	_, err = cfg.WithSecrets(src).Levels(t.Context(), reg, "n1", fence.StepPowerManagement, nil)
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, config.ErrSecretNotFound)
	assert.Equal(t, "snmp_priv_passwd_secret", ce.Key)
	assert.Contains(t, err.Error(), "bmc-n1/priv")
	assert.NotContains(t, err.Error(), "rotated-pw-1")

	// Both there: the driver gets the values under the parameters' keys.
	src["bmc-n1/priv"] = "priv-pw"
	levels, err := cfg.WithSecrets(src).Levels(t.Context(), reg, "n1", fence.StepPowerManagement, nil)
	require.NoError(t, err)
	require.Len(t, levels, 1)
	require.Len(t, opened, 1)
	assert.Equal(t, "rotated-pw-1", opened[0]["password"])
	assert.Equal(t, "priv-pw", opened[0]["snmp_priv_passwd"])
	assert.NotContains(t, opened[0], "password_secret")
	assert.NotContains(t, fmt.Sprint(levels[0].Methods[0]), "rotated-pw-1")

	// Rotated: the next open reads the new value; the Config is unchanged.
	src["bmc-n1/password"] = "rotated-pw-2"
	_, err = cfg.WithSecrets(src).OpenMethod(t.Context(), reg, "n1", "bmc-off", nil)
	require.NoError(t, err)
	assert.Equal(t, "rotated-pw-2", opened[1]["password"])
	_, p, _ := cfg.MethodParams("n1", "bmc-off")
	assert.Equal(t, "bmc-n1/password", p["password_secret"])
}

// ParseFor keeps the nodes whose configuration is good, and names
// the others' errors; ValidateConfigMaps gives every problem at once, of
// the parse and of the drivers.
func TestParseConfigForAndValidateConfigMaps(t *testing.T) {
	reg := strictRegistry(t, nil)
	cms := append(strictCMs("template=bmcs\nip=10.0.0.1\nretry_on=3"),
		cfgMethod("bmc-off", "n2", "template=bmcs\nip=10.0.0.2\nipmitool_pth=/x"),
		cfgNode("n2", "power_management=bmc-off"),
		cfgMethod("bmc-off", "n3", "template=bmcs\nip=10.0.0.3\npower_timeout=soon"),
		cfgNode("n3", "power_management=bmc-off"),
	)
	cfg, err := config.ParseFor(cms, reg)
	require.NotNil(t, cfg)
	assert.Equal(t, []string{"n1"}, cfg.Nodes())
	assert.Nil(t, config.ErrorsFor(err, "n1"))
	n2 := config.ErrorsFor(err, "n2")
	require.Error(t, n2)
	assert.Contains(t, n2.Error(), "key ipmitool_pth")
	assert.Contains(t, n2.Error(), "did you mean ipmitool_path?")

	all := cfgErrors(t, config.ValidateConfigMaps(cms, reg))
	var keys []string
	for _, e := range all {
		keys = append(keys, e.ConfigMap+"|"+e.Key)
	}
	assert.ElementsMatch(t, []string{"fence-method-bmc-off-n3|power_timeout", "fence-method-bmc-off-n2|ipmitool_pth"}, keys)
	assert.NoError(t, config.ValidateConfigMaps(strictCMs("template=bmcs\nip=10.0.0.1"), reg))
}

func TestParseSecretRef(t *testing.T) {
	r, err := config.ParseSecretRef(" bmc-creds.rack1/password ")
	require.NoError(t, err)
	assert.Equal(t, config.SecretRef{Name: "bmc-creds.rack1", Key: "password"}, r)
	for _, bad := range []string{"", "name", "/key", "name/", "Name/key", "name/k y", "a/b/c", "-x/key"} {
		_, err := config.ParseSecretRef(bad)
		assert.Error(t, err, "%q", bad)
	}
	assert.True(t, errors.Is(fmt.Errorf("x: %w", config.ErrSecretNotFound), config.ErrSecretNotFound))
}
