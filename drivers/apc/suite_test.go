package apc

import (
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmppdu/pdutest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// pdu is this driver to the suite the PDU drivers share (pdutest.Driver):
// its models and its agent, fence_apc_snmp, which reads a missing outlet's
// noSuchInstance as "off" and reports a fencing success it never did
// (MissingOutlet logs it; fencekit fails).
var pdu = pdutest.Driver{
	Kind:    kind,
	Aliases: []string{"apc", "APC", "fence_apc_snmp", "fence_tripplite_snmp", "apc+udp"},
	Agent:   agentName,
	Models:  []snmpsim.Model{snmpsim.APC, snmpsim.APCMasterSwitch, snmpsim.APCRPDU2, snmpsim.Tripplite, snmpsim.TrippliteLX},
	NoCycle: []snmpsim.Model{snmpsim.Tripplite, snmpsim.TrippliteLX},
}

// The shared suite, against net-snmp's snmpd and ClusterLabs' agent.
func TestPDU(t *testing.T) { pdu.Run(t) }

func TestFenceAgentsRemediationCommandLines(t *testing.T) { pdu.FenceAgentsRemediationCommandLines(t) }

// Bad input beyond the suite's wrong community and passphrase: each a
// clear error within the configured timeout, naming the device and the
// method, never holding a secret, never a success; then raw values outside
// the model's mapping.
func TestBadInput(t *testing.T) {
	pdu.BadInput(t, []pdutest.BadInput{
		{Name: "wrong community, SNMPv1 and the defaults", KV: []string{"snmp_timeout", "0.2"},
			Is: fence.ErrUnreachable, Within: 3 * time.Second, Says: "wrong community"},
		{Name: "v3 user unknown", KV: []string{"snmp_version", "3", "username", "nobody", "password", secret},
			Is: fence.ErrLoginDenied, Within: 2 * time.Second, Says: "usmStatsUnknownUserNames"},
		{Name: "unknown model", Sim: snmpsim.Options{Model: snmpsim.APC, SysObjectID: ".1.3.6.1.4.1.318.1.3.4.4"}, KV: []string{"snmp_version", "2c", "community", secret},
			Is: ErrUnknownModel, Within: 2 * time.Second, Says: "sysObjectID .1.3.6.1.4.1.318.1.3.4.4 is an APC MasterSwitch Plus (outlets addressed as switch:outlet), which this driver does not support"},
	}, map[int]error{4: fence.ErrBadState})
}
