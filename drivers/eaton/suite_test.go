package eaton

import (
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/snmppdu/pdutest"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// pdu is this driver to the suite the PDU drivers share (pdutest.Driver):
// its models and its agent, fence_eaton_snmp, which waits 2 s after a
// command by default (the tests give it --power-wait 0).
var pdu = pdutest.Driver{
	Kind:       kind,
	Aliases:    []string{"eaton", "fence_eaton_snmp", "eaton+udp"},
	Agent:      agentName,
	AgentExtra: []string{"--power-wait", "0"},
	// fence_eaton_snmp fails an off of an outlet the PDU does not have.
	AgentRefusesMissingOutlet: true,
	Models:                    []snmpsim.Model{snmpsim.EatonSwitched, snmpsim.EatonManaged},
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
		{Name: "wrong v3 privacy passphrase", KV: []string{"snmp_version", "3", "username", snmpsim.DefaultUser, "password", snmpsim.DefaultAuthPass,
			"snmp_auth_prot", "SHA", "snmp_priv_passwd", "Qz7-wrong-" + secret, "snmp_priv_prot", "AES", "snmp_timeout", "0.3", "snmp_retries", "0"},
			Is: ErrNoReply, Within: 3 * time.Second, Says: "wrong privacy passphrase"},
		{Name: "not an Eaton", Sim: snmpsim.Options{Model: snmpsim.APC}, KV: []string{"snmp_version", "2c", "community", secret},
			Is: ErrUnknownModel, Within: 2 * time.Second, Says: "sysObjectID .1.3.6.1.4.1.318.1.3.4.5 is none of the eaton driver's models"},
	}, map[int]error{3: fence.ErrBadState, 0: fence.ErrUnknownPlug}) // the Switched ePDU's 0 is a missing outlet
}
