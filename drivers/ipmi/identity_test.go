package ipmi

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// Two machines, each with its BMC; node-1's method names the other BMC (a
// swapped cable, a copied ConfigMap). The off is refused before anything
// is switched, not done, naming both identities, and the healthy machine
// stays on; the method with the right address fences node-1. On both live
// peers: go-ipmi's BMC and OpenIPMI's ipmi_sim. ipmitool reads the same
// GUID the driver does.
func TestIdentitySwappedAddress(t *testing.T) {
	// The node's system UUID as the kubelet reports it (SMBIOS order); the
	// BMC sends the same sixteen bytes with the first three fields least
	// significant byte first.
	const nodeUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	wire, err := fence.ParseUUID("44454c4c-3200-1033-8051-b7c04f333532")
	require.NoError(t, err)
	other, err := fence.ParseUUID("6d1c7f0e-5a3b-4c2e-9f11-000000000001")
	require.NoError(t, err)

	type pair struct{ right, wrong peer }
	peers := map[string]func(t *testing.T) pair{
		"goipmi": func(t *testing.T) pair {
			_, right := goBMCPeer(t, ipmisim.GoBMCOptions{SystemGUID: wire})
			_, wrong := goBMCPeer(t, ipmisim.GoBMCOptions{SystemGUID: other})
			return pair{right, wrong}
		},
		"ipmi_sim": func(t *testing.T) pair {
			_, right := simPeer(t, ipmisim.SimOptions{GUID: strings.ReplaceAll(fence.FormatUUID(wire), "-", "")})
			_, wrong := simPeer(t, ipmisim.SimOptions{GUID: strings.ReplaceAll(fence.FormatUUID(other), "-", "")})
			return pair{right, wrong}
		},
	}
	for name, start := range peers {
		t.Run(name, func(t *testing.T) {
			p := start(t)
			if name == "ipmi_sim" {
				// ipmitool decodes the GUID as SMBIOS: the node's UUID.
				ipmitool := ipmisim.RequireTool(t, "ipmitool", "ipmitool")
				out, err := exec.Command(ipmitool, "-I", "lanplus", "-H", ipmisim.Host, "-p", strconv.Itoa(p.right.port),
					"-U", p.right.user, "-P", p.right.password, "mc", "guid").CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Contains(t, string(out), "System GUID   : "+nodeUUID)
			}
			swapped := method(p.wrong.open(t, nil), "bmc")
			swapped.SystemUUID = nodeUUID
			_, err := fence.Do(ctx(t), swapped, fence.ActionOff)
			require.Error(t, err)
			assert.True(t, errors.Is(err, fence.ErrWrongMachine), "%v", err)
			assert.True(t, fence.IsNotDone(err), "%v", err)
			assert.Contains(t, err.Error(), nodeUUID)
			assert.Contains(t, err.Error(), fence.FormatUUID(other))
			assert.NotContains(t, err.Error(), p.wrong.password)
			st, err := p.wrong.truth()
			require.NoError(t, err)
			assert.Equal(t, fence.StateOn, st, "the healthy machine behind the swapped address was switched")

			right := method(p.right.open(t, nil), "bmc")
			right.SystemUUID = nodeUUID
			res, err := fence.Do(ctx(t), right, fence.ActionOff)
			require.NoError(t, err)
			assert.True(t, res.Fenced())
			st, err = p.right.truth()
			require.NoError(t, err)
			assert.Equal(t, fence.StateOff, st)
		})
	}
}

// A BMC without Get System GUID (go-ipmi's BMC refuses it unless given
// one): no identity, so the off proceeds, with a warning.
func TestIdentityBMCWithoutGUID(t *testing.T) {
	_, p := goBMCPeer(t, ipmisim.GoBMCOptions{})
	d := p.open(t, nil)
	_, err := d.Identity(ctx(t), "")
	require.ErrorIs(t, err, fence.ErrNoIdentity)
	m := method(d, "bmc")
	m.SystemUUID = "4c4c4544-0032-3310-8051-b7c04f333532"
	res, err := fence.Do(ctx(t), m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
}
