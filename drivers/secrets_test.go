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
	ipmiOpts := ipmi.Options{Host: "10.0.0.5", Username: "admin", Password: secret}
	redfishOpts := redfish.Options{Endpoint: "https://10.0.0.6", Username: "admin", Password: secret}
	brocadeOpts := brocade.Options{Host: "10.0.0.7", Username: "admin", Password: secret, InsecureIgnoreHostKey: true}
	apcOpts := apc.Options{Host: "10.0.0.8", Version: "3", Username: "u", AuthProtocol: "SHA", AuthPassword: secret,
		PrivProtocol: "AES", PrivPassword: secret, Community: secret}
	eatonOpts := eaton.Options{Host: "10.0.0.9", Version: "2c", Community: secret}
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
