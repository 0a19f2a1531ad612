// Package drivers_test checks, for every driver at once, that the types
// holding credentials never print them.
package drivers_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/agent"
	"github.com/fencekit/fencekit/drivers/apc"
	"github.com/fencekit/fencekit/drivers/brocade"
	"github.com/fencekit/fencekit/drivers/eaton"
	"github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/drivers/redfish"
	"github.com/fencekit/fencekit/fence"
)

// secret is a credential no output may hold, nor its first half.
const secret = "Qz7-unl1kely-Pa55wd"

// printed returns every way a value is printed: fmt's verbs and slog's
// text and JSON handlers, alone and inside a slice and a struct.
func printed(v any) string {
	var b bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		fmt.Fprintf(&b, verb+"\n", v)
	}
	fmt.Fprintf(&b, "%+v\n", []any{v})
	fmt.Fprintf(&b, "%+v\n", struct{ V any }{v})
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "v", v)
	slog.New(slog.NewJSONHandler(&b, nil)).Info("x", "v", v)
	return b.String()
}

func assertNoSecret(t *testing.T, what, out string) {
	t.Helper()
	assert.NotContains(t, out, secret, what)
	assert.NotContains(t, out, secret[:12], what)
}

func TestDriversPrintNoSecret(t *testing.T) {
	ipmiOpts := ipmi.Options{Host: "10.0.0.5", Username: "admin", Password: fence.NewSecret(secret)}
	redfishOpts := redfish.Options{Endpoint: "https://10.0.0.6", Username: "admin", Password: fence.NewSecret(secret)}
	brocadeOpts := brocade.Options{Host: "10.0.0.7", Username: "admin", Password: fence.NewSecret(secret), InsecureIgnoreHostKey: true}
	apcOpts := apc.Options{Host: "10.0.0.8", Version: "3", Username: "u", AuthProtocol: "SHA", AuthPassword: fence.NewSecret(secret),
		PrivProtocol: "AES", PrivPassword: fence.NewSecret(secret), Community: fence.NewSecret(secret)}
	eatonOpts := eaton.Options{Host: "10.0.0.9", Version: "2c", Community: fence.NewSecret(secret)}
	agentOpts := agent.Options{Path: "fence_dummy", Params: fence.NewParams("password", secret, "passwd", secret),
		Env: []string{"https_proxy=http://u:" + secret + "@proxy:3128"}}

	for name, v := range map[string]any{
		"ipmi.Options": ipmiOpts, "redfish.Options": redfishOpts, "brocade.Options": brocadeOpts,
		"apc.Options": apcOpts, "eaton.Options": eatonOpts, "agent.Options": agentOpts,
		"*ipmi.Options": &ipmiOpts, "*redfish.Options": &redfishOpts,
	} {
		out := printed(v)
		assertNoSecret(t, name, out)
		assert.Contains(t, out, "REDACTED", name)
	}

	devices := map[string]fence.Device{}
	if d, err := ipmi.New(ipmiOpts); assert.NoError(t, err) {
		devices["ipmi"] = d
	}
	if d, err := redfish.New(redfishOpts); assert.NoError(t, err) {
		devices["redfish"] = d
	}
	if d, err := brocade.New(brocadeOpts); assert.NoError(t, err) {
		devices["brocade"] = d
	}
	if d, err := apc.New(apcOpts); assert.NoError(t, err) {
		devices["apc"] = d
	}
	if d, err := eaton.New(eatonOpts); assert.NoError(t, err) {
		devices["eaton"] = d
	}
	if _, err := agent.LookPath("fence_dummy"); err == nil {
		d, err := agent.New(context.Background(), agent.Options{Path: "fence_dummy", Params: fence.NewParams("type", "file", "status_file", "/nonexistent")})
		require.NoError(t, err)
		devices["agent"] = d
	}
	for name, d := range devices {
		out := printed(d)
		assertNoSecret(t, name, out)
		assert.False(t, strings.Contains(out, "{}"), "%s prints itself as its address, not as an empty struct: %s", name, out)
		if c, ok := d.(interface{ Close() error }); ok {
			c.Close()
		}
	}
	// Redfish's Basic header is the base64 of user:password.
	require.Contains(t, devices, "redfish")
	assert.NotContains(t, printed(devices["redfish"]), "Basic")
}

// warnings counts the records at level Warn a logger received.
type warnings struct {
	slog.Handler
	n    *int
	msgs *[]string
}

func newWarnings() (*slog.Logger, *int, *[]string) {
	n, msgs := new(int), new([]string)
	return slog.New(warnings{Handler: slog.DiscardHandler, n: n, msgs: msgs}), n, msgs
}

func (w warnings) Enabled(context.Context, slog.Level) bool { return true }

func (w warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		*w.n++
		*w.msgs = append(*w.msgs, r.Message)
	}
	return nil
}

// Every insecure setting is said once per device, through its logger; a
// secure one says nothing.
func TestInsecureSettingsWarnOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		open   func(*slog.Logger) error
		warned bool
		about  string
	}{
		{"redfish ssl_insecure", func(l *slog.Logger) error {
			_, err := redfish.New(redfish.Options{Endpoint: "https://10.0.0.6", InsecureSkipVerify: true, Logger: l})
			return err
		}, true, "not verified"},
		{"redfish http", func(l *slog.Logger) error {
			_, err := redfish.New(redfish.Options{Endpoint: "http://10.0.0.6", Logger: l})
			return err
		}, true, "plain HTTP"},
		{"redfish verified", func(l *slog.Logger) error {
			_, err := redfish.New(redfish.Options{Endpoint: "https://10.0.0.6", Logger: l})
			return err
		}, false, ""},
		{"ipmi v1.5", func(l *slog.Logger) error {
			_, err := ipmi.New(ipmi.Options{Host: "10.0.0.5", V15: true, Username: "u", Password: fence.NewSecret("p"), Logger: l})
			return err
		}, true, "IPMI v1.5"},
		{"ipmi v2.0", func(l *slog.Logger) error {
			_, err := ipmi.New(ipmi.Options{Host: "10.0.0.5", Username: "u", Password: fence.NewSecret("p"), Logger: l})
			return err
		}, false, ""},
		{"apc v1 private", func(l *slog.Logger) error {
			_, err := apc.New(apc.Options{Host: "10.0.0.8", Version: "1", Logger: l})
			return err
		}, true, `default community "private"`},
		{"eaton v2c", func(l *slog.Logger) error {
			_, err := eaton.New(eaton.Options{Host: "10.0.0.9", Version: "2c", Community: fence.NewSecret("s3t"), Logger: l})
			return err
		}, true, "in clear"},
		{"apc v3", func(l *slog.Logger) error {
			_, err := apc.New(apc.Options{Host: "10.0.0.8", Version: "3", Username: "u", AuthProtocol: "SHA", AuthPassword: fence.NewSecret("authpass1"),
				PrivProtocol: "AES", PrivPassword: fence.NewSecret("privpass1"), Logger: l})
			return err
		}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, n, msgs := newWarnings()
			require.NoError(t, c.open(l))
			if !c.warned {
				assert.Zero(t, *n, "%v", *msgs)
				return
			}
			require.Equal(t, 1, *n, "%v", *msgs)
			assert.Contains(t, (*msgs)[0], c.about)
		})
	}
}
