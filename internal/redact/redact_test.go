package redact_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fencekit/fencekit/internal/redact"
)

const secret = "Qz7-unl1kely-s3cret"

type inner struct {
	Community string
	Port      int
}

type opts struct {
	Host         string
	Password     string
	PrivPassword string
	Empty        string
	Token        string
	Inner        inner
	private      string
}

func (o opts) Format(f fmt.State, verb rune) { redact.Format(f, o) }
func (o opts) String() string                { return redact.Struct(o) }
func (o opts) LogValue() slog.Value          { return slog.StringValue(redact.Struct(o)) }

func TestStruct(t *testing.T) {
	o := opts{Host: "bmc-1", Password: secret, PrivPassword: secret, Token: secret,
		Inner: inner{Community: secret, Port: 161}, private: secret}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("opened", "options", o, "ptr", &o)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("opened", "options", o)
	for _, s := range []string{
		fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), fmt.Sprintf("%s", o), fmt.Sprintf("%q", o),
		fmt.Sprintf("%v", &o), fmt.Sprintf("%+v", []opts{o}), fmt.Sprint(map[string]any{"o": o}), o.String(), logs.String(),
	} {
		assert.NotContains(t, s, secret)
		assert.Contains(t, s, "bmc-1")
	}
	assert.Equal(t, `redact_test.opts{Host:bmc-1 Password:REDACTED PrivPassword:REDACTED Empty: Token:REDACTED Inner:redact_test.inner{Community:REDACTED Port:161}}`, o.String())
	assert.Equal(t, `redact_test.opts{Host: Password:"" PrivPassword:"" Empty: Token:"" Inner:redact_test.inner{Community:"" Port:0}}`, opts{}.String(), "an unset secret shows as empty")
}

func TestIsSecretField(t *testing.T) {
	for _, n := range []string{"Password", "AuthPassword", "snmp_priv_passwd", "Community", "Token", "SessionToken", "basic", "Authorization", "Passphrase", "key", "Signers"} {
		assert.True(t, redact.IsSecretField(n), n)
	}
	for _, n := range []string{"Username", "Host", "IdentityFile", "KnownHostsFiles", "Port", "Cipher"} {
		assert.False(t, redact.IsSecretField(n), n)
	}
}
