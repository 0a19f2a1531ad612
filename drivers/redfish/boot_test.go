package redfish_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// sushyScript reads a system's boot source override with OpenStack's
// Redfish client library, sushy (Debian's python3-sushy), as Ironic would.
const sushyScript = `
import sys, sushy
url, user, password, ca, system = sys.argv[1:6]
root = sushy.Sushy(url + "/redfish/v1", username=user, password=password, verify=ca)
b = root.get_system(system).boot
v = lambda x: getattr(x, "value", x)
print(v(b.target), v(b.enabled), v(b.mode))
`

// sushyBoot returns "target enabled" as sushy reads them.
func sushyBoot(t *testing.T, s *redfishsim.Server) string {
	t.Helper()
	f := strings.Fields(sushyRead(t, s))
	require.Len(t, f, 3)
	return f[0] + " " + f[1]
}

// sushyMode returns the override's boot mode as sushy reads it (UEFI or
// Legacy, sushy's enumeration's values).
func sushyMode(t *testing.T, s *redfishsim.Server) string {
	t.Helper()
	f := strings.Fields(sushyRead(t, s))
	require.Len(t, f, 3)
	return f[2]
}

// sushyRead returns "target enabled mode" as sushy reads them.
func sushyRead(t *testing.T, s *redfishsim.Server) string {
	t.Helper()
	// Debian's python3, which has Debian's python3-sushy, even where
	// another python3 comes first on PATH.
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import sushy").Run(); err != nil {
		ipmisim.RequireTool(t, "python3-sushy (import sushy failed: "+err.Error()+")", "python3-sushy")
	}
	ca, err := s.WriteCA(t.TempDir())
	require.NoError(t, err)
	cmd := exec.CommandContext(ctxT(t), python, "-c", sushyScript, s.URL(), s.Username(), s.Password(), ca, s.SystemURI("1"))
	// A clean environment: requests lets REQUESTS_CA_BUNDLE and
	// CURL_CA_BUNDLE override the CA a session is given.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// The boot device set through the driver, read back with sushy: the
// override target for the next boot only; the responder's next boot uses
// it and clears it.
func TestBootDeviceReadBySushy(t *testing.T) {
	s := start(t, redfishsim.Options{})
	m := kit(t, s)
	assert.Equal(t, "None Disabled", sushyBoot(t, s))
	for _, tc := range []struct {
		dev   fence.BootDevice
		sushy string
	}{
		{fence.BootCD, "cd Once"},
		{fence.BootBIOS, "BiosSetup Once"},
		{fence.BootDisk, "hdd Once"},
		{fence.BootPXE, "pxe Once"},
	} {
		require.NoError(t, fence.SetBootDevice(ctxT(t), m, tc.dev), tc.dev)
		assert.Equal(t, strings.ToLower(tc.sushy), strings.ToLower(sushyBoot(t, s)), tc.dev)
	}
	// The reinstall's verified reboot boots the installer from the
	// network, once.
	res, err := fence.Do(ctxT(t), m, fence.ActionReboot)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, []string{"Pxe"}, s.Boots("1"))
	assert.Equal(t, "none disabled", strings.ToLower(sushyBoot(t, s)))
	assert.NotContains(t, fmt.Sprint(m.Device), s.Password())

	// boot_mode sets BootSourceOverrideMode with the target, read back.
	assert.Equal(t, "UEFI", sushyMode(t, s), "the system's mode, left as it was")
	require.NoError(t, fence.SetBootDevice(ctxT(t), kit(t, s, "boot_mode", "legacy"), fence.BootPXE))
	assert.Equal(t, "Legacy", sushyMode(t, s))
	assert.Equal(t, "pxe once", strings.ToLower(sushyBoot(t, s)))
	require.NoError(t, fence.SetBootDevice(ctxT(t), kit(t, s, "boot_mode", "uefi"), fence.BootPXE))
	assert.Equal(t, "UEFI", sushyMode(t, s))
	_, err = fence.DefaultRegistry().Open(ctxT(t), "", &fence.MethodOptions{Node: "worker-1", Name: "bmc", Driver: "fence_redfish", Params: fence.NewParams("ip", s.Host(), "username", "u", "password", "p", "boot_mode", "efi-ish")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boot_mode")
	assert.Contains(t, err.Error(), "want uefi or legacy")
}
