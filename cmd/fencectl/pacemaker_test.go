package main

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/internal/pcmktest"
	"github.com/fencekit/fencekit/internal/proctest"
	"github.com/fencekit/fencekit/internal/redfishsim"
	"github.com/fencekit/fencekit/internal/snmpsim"
)

// installAgent copies the built fencectl to /usr/sbin/NAME, where Pacemaker
// looks for fence agents, and removes it when tb ends. It never replaces a
// file that is there, unless it is a fencectl an interrupted run left.
func installAgent(tb testing.TB, name string) {
	tb.Helper()
	bin := proctest.Fencectl(tb, "", "")
	dst := "/usr/sbin/" + name
	data, err := os.ReadFile(bin)
	require.NoError(tb, err)
	if old, err := os.ReadFile(dst); err == nil && bytes.Contains(old, []byte("github.com/fencekit/fencekit/cmd/fencectl")) {
		// A fencectl a killed run left behind: ours to replace.
		require.NoError(tb, os.Remove(dst))
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(tb, err, "%s exists already: not replaced", dst)
	tb.Cleanup(func() { os.Remove(dst) })
	_, err = f.Write(data)
	require.NoError(tb, err)
	require.NoError(tb, f.Close())
}

// A real Pacemaker (corosync and pacemakerd on loopback) fences nodes
// through fencectl, installed as fence_fencekit and configured with
// cibadmin as an admin would (Pacemaker's default pcmk_host_argument, so
// port=<node> reaches the agent), and through ClusterLabs' fence_ipmilan in
// the same cluster, each with its own go-ipmi BMC: the same stonith_admin
// commands give the same results (fence, unfence, reboot), and a BMC that
// stops answering is reported as a failure by both.
func TestPacemakerFencesThroughFencectlAsThroughFenceIPMILan(t *testing.T) {
	if testing.Short() {
		t.Skip("a Pacemaker cluster takes about 30 s to start")
	}
	requireTool(t, "/usr/sbin/fence_ipmilan")
	requireTool(t, "/usr/bin/ipmitool")
	c := pcmktest.Start(t)
	installAgent(t, "fence_fencekit")

	type target struct {
		node, device, agent string
		bmc                 *ipmisim.GoBMC
	}
	targets := []target{
		{"node2", "fk-node2", "fence_fencekit", ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{})},
		{"node3", "ipmilan-node3", "fence_ipmilan", ipmisim.StartGoBMC(t, ipmisim.GoBMCOptions{})},
	}
	for _, tg := range targets {
		attrs := []string{"ip", ipmisim.Host, "ipport", strconv.Itoa(tg.bmc.Port), "username", tg.bmc.User,
			"password", tg.bmc.Password, "lanplus", "1", "cipher", "3", "pcmk_host_list", tg.node, "power_timeout", "10"}
		if tg.agent == "fence_fencekit" {
			attrs = append(attrs, "driver", "ipmi")
		}
		c.CreateDevice(tg.device, tg.agent, attrs...)
	}
	for _, tg := range targets {
		c.WaitDevice(tg.device)
	}

	// pcs validates a device against the agent's metadata, as an admin's
	// pcs stonith create does: fencectl's is accepted, like the agent's.
	if _, err := os.Stat("/usr/sbin/pcs"); err == nil {
		cib := c.Dir + "/cib.xml"
		out, err := c.Run("sh", "-c", "cibadmin -Q > "+cib)
		require.NoError(t, err, out)
		for _, agent := range []string{"fence_fencekit", "fence_ipmilan"} {
			out, err := c.Run("pcs", "-f", cib, "stonith", "create", "pcs-"+agent, agent, "ip="+ipmisim.Host,
				"username=admin", "password=x", "lanplus=1", "pcmk_host_list=node4")
			assert.NoError(t, err, "pcs stonith create with %s: %s", agent, out)
		}
	}

	for _, step := range []struct {
		args []string
		want fence.State
	}{
		{[]string{"--fence"}, fence.StateOff},
		{[]string{"--unfence"}, fence.StateOn},
		{[]string{"--fence"}, fence.StateOff},
		{[]string{"--reboot"}, fence.StateOn},
	} {
		for _, tg := range targets {
			out, err := c.Stonith(append(append([]string{}, step.args...), tg.node, "--timeout", "60")...)
			require.NoError(t, err, "%s %s through %s: %s\n%s", step.args[0], tg.node, tg.agent, out, c.Logs())
			assert.Equal(t, step.want, tg.bmc.Truth(), "%s %s through %s", step.args[0], tg.node, tg.agent)
		}
	}

	// A BMC that stops answering: both report the fencing as failed, and
	// the node stays as it was.
	for _, tg := range targets {
		tg.bmc.SetFault(ipmisim.FaultSilent)
		out, err := c.Stonith("--fence", tg.node, "--timeout", "60")
		assert.Error(t, err, "%s through %s with its BMC silent: %s", tg.node, tg.agent, out)
		assert.Equal(t, fence.StateOn, tg.bmc.Truth())
	}
	out, _ := c.Stonith("--history", "*")
	t.Logf("stonith history:\n%s", out)
}

func requireTool(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (make deps)", path)
		}
		t.Skipf("%s is missing", path)
	}
}

// BenchmarkPacemakerReboot compares, in one run on one real Pacemaker
// cluster, stonith_admin --reboot of a node through fencectl (installed as
// fence_fencekit, driver=ipmi) and through ClusterLabs' fence_ipmilan, each
// on its own go-ipmi BMC on loopback: the whole chain, from the request to
// pacemaker-fenced to the agent's process to the BMC and back. Starting the
// cluster (about 25 s) is not timed.
//
//	go test ./cmd/fencectl -run '^$' -bench PacemakerReboot -benchtime 5x -count 3
func BenchmarkPacemakerReboot(b *testing.B) {
	if _, err := os.Stat("/usr/sbin/fence_ipmilan"); err != nil {
		b.Skip("fence_ipmilan is missing")
	}
	c := pcmktest.Start(b)
	installAgent(b, "fence_fencekit")
	bmcs := map[string]*ipmisim.GoBMC{}
	for node, agent := range map[string]string{"node2": "fence_fencekit", "node3": "fence_ipmilan"} {
		bmc := ipmisim.StartGoBMC(b, ipmisim.GoBMCOptions{})
		bmcs[node] = bmc
		attrs := []string{"ip", ipmisim.Host, "ipport", strconv.Itoa(bmc.Port), "username", bmc.User,
			"password", bmc.Password, "lanplus", "1", "cipher", "3", "pcmk_host_list", node}
		if agent == "fence_fencekit" {
			attrs = append(attrs, "driver", "ipmi")
		}
		c.CreateDevice("dev-"+node, agent, attrs...)
		c.WaitDevice("dev-" + node)
	}
	for _, tc := range []struct{ tool, node string }{{"fencectl", "node2"}, {"fence_ipmilan", "node3"}} {
		b.Run("tool="+tc.tool, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if out, err := c.Stonith("--reboot", tc.node, "--timeout", "60"); err != nil {
					b.Fatalf("reboot %s: %v: %s", tc.node, err, out)
				}
				if bmcs[tc.node].Truth() != fence.StateOn {
					b.Fatalf("%s not on after its reboot", tc.node)
				}
			}
		})
	}
}

// pcmkTarget is a node of the cluster's test, its device, and how to read
// the node's power as its simulator holds it.
type pcmkTarget struct {
	node, device, agent string
	attrs               []string
	truth               func() fence.State
}

// The same on the Redfish responder (fence_redfish beside fencectl with
// driver=redfish), on snmpd PDUs (fence_apc_snmp beside fencectl with
// driver=apc) and on sshd FC switches (fence_brocade beside fencectl with
// driver=brocade, fence and unfence: fabric fencing has no reboot). The PDU
// devices have no pcmk_host_list: Pacemaker asks each device's list, as it
// does for agents that advertise one, and finds the node by its outlet's
// name; the switches map the node to port 2 (pcmk_host_map).
func TestPacemakerFencesOnRedfishPDUsAndSwitches(t *testing.T) {
	if testing.Short() {
		t.Skip("a Pacemaker cluster takes about 30 s to start")
	}
	for _, a := range []string{"/usr/sbin/fence_redfish", "/usr/sbin/fence_apc_snmp", "/usr/bin/snmpget"} {
		requireTool(t, a)
	}
	c := pcmktest.Start(t)
	installAgent(t, "fence_fencekit")

	var targets []pcmkTarget
	for _, side := range []struct{ node, agent string }{{"node4", "fence_fencekit"}, {"node5", "fence_redfish"}} {
		s := redfishsim.New(redfishsim.Options{})
		t.Cleanup(s.Close)
		attrs := []string{"ip", s.Host(), "ipport", strconv.Itoa(s.Port()), "username", s.Username(), "password", s.Password(),
			"ssl_insecure", "1", "systems_uri", s.SystemURI("1"), "pcmk_host_list", side.node, "power_timeout", "10"}
		if side.agent == "fence_fencekit" {
			attrs = append(attrs, "driver", "redfish")
		}
		targets = append(targets, pcmkTarget{side.node, "redfish-" + side.node, side.agent, attrs, func() fence.State { return s.Truth("1") }})
	}
	for _, side := range []struct{ node, agent string }{{"node6", "fence_fencekit"}, {"node7", "fence_apc_snmp"}} {
		// Every outlet named, none after another node (the simulator names
		// an unnamed outlet N "nodeN").
		s := snmpsim.Start(t, snmpsim.Options{Model: snmpsim.APC, Outlets: 4,
			Names: map[int]string{1: "spare-1", 2: "spare-2", 3: side.node, 4: "spare-4"}})
		attrs := []string{"ip", snmpsim.Host, "ipport", strconv.Itoa(s.Port), "snmp_version", "2c", "community", s.Options.Community,
			"power_timeout", "10"}
		if side.agent == "fence_fencekit" {
			attrs = append(attrs, "driver", "apc")
		}
		targets = append(targets, pcmkTarget{side.node, "pdu-" + side.node, side.agent, attrs, func() fence.State {
			st, _ := s.Truth("3")
			return st
		}})
	}
	// FC switches (sshd with the FOS shell): port 2 feeds node8 or node9,
	// through pcmk_host_map. Fabric fencing has no reboot.
	var fabric []pcmkTarget
	if _, err := os.Stat("/usr/sbin/fence_brocade"); err == nil {
		for _, side := range []struct{ node, agent string }{{"node8", "fence_fencekit"}, {"node9", "fence_brocade"}} {
			sw := brocadesim.Start(t, brocadesim.Options{Ports: 4})
			attrs := []string{"ip", brocadesim.Host, "ipport", strconv.Itoa(sw.Port), "username", sw.User, "password", sw.Password,
				"pcmk_host_map", side.node + ":2", "power_timeout", "10"}
			if side.agent == "fence_fencekit" {
				attrs = append(attrs, "driver", "brocade", "known_hosts", sw.KnownHosts)
			} else {
				attrs = append(attrs, "ssh", "1", "ssh_options", "-oUserKnownHostsFile="+sw.KnownHosts, "login_timeout", "20")
			}
			fabric = append(fabric, pcmkTarget{side.node, "fc-" + side.node, side.agent, attrs, func() fence.State {
				st, _ := sw.Truth("2")
				return st
			}})
		}
	}
	for _, tg := range append(targets, fabric...) {
		c.CreateDevice(tg.device, tg.agent, tg.attrs...)
	}
	for _, tg := range append(targets, fabric...) {
		c.WaitDevice(tg.device)
	}
	for _, step := range []struct {
		args []string
		want fence.State
	}{
		{[]string{"--fence"}, fence.StateOff},
		{[]string{"--unfence"}, fence.StateOn},
		{[]string{"--reboot"}, fence.StateOn},
	} {
		all := targets
		if step.args[0] != "--reboot" {
			all = append(all, fabric...)
		}
		for _, tg := range all {
			out, err := c.Stonith(append(append([]string{}, step.args...), tg.node, "--timeout", "60")...)
			require.NoError(t, err, "%s %s through %s: %s\n%s", step.args[0], tg.node, tg.agent, out, c.Logs())
			assert.Equal(t, step.want, tg.truth(), "%s %s through %s", step.args[0], tg.node, tg.agent)
		}
	}
}
