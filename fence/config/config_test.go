package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// cfgSecrets are the passwords of the test configurations; no error may
// quote them.
var cfgSecrets = []string{"brocade_password", "apc_password", "eaton_password", "eaton_snmp_passwd", "s3cret-pw", "s3cret\\u12"}

func cfgLoadFile(t *testing.T, name string) []config.ConfigMap {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	cms, err := config.LoadConfigMaps(f)
	require.NoError(t, err)
	return cms
}

func cfgLoad(t *testing.T, s string) []config.ConfigMap {
	t.Helper()
	cms, err := config.LoadConfigMaps(strings.NewReader(s))
	require.NoError(t, err)
	return cms
}

// cfgErrors returns the ConfigErrors joined in err, checking that each is
// one and that none quotes a secret.
func cfgErrors(t *testing.T, err error) []*config.Error {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrConfig)
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []*config.Error
	for _, e := range errs {
		var ce *config.Error
		require.True(t, errors.As(e, &ce), "%T is not a *Error: %v", e, e)
		assert.ErrorIs(t, e, fence.ErrConfig)
		out = append(out, ce)
	}
	for _, s := range cfgSecrets {
		assert.NotContains(t, err.Error(), s)
	}
	return out
}

func cfgNode(name, body string) config.ConfigMap {
	return config.ConfigMap{Name: "fence-config-" + name, Namespace: "default", Data: map[string]string{"config.properties": body}}
}

func cfgMethod(method, node, body string) config.ConfigMap {
	return config.ConfigMap{Name: "fence-method-" + method + "-" + node, Namespace: "default", Data: map[string]string{"method.properties": body}}
}

func cfgTemplate(name, body string) config.ConfigMap {
	return config.ConfigMap{Name: "fence-method-template-" + name, Namespace: "default", Data: map[string]string{"template.properties": body}}
}

// cfgBase is a small valid configuration: node n1 isolates with a switch
// port and powers off with a PDU outlet.
func cfgBase() []config.ConfigMap {
	return []config.ConfigMap{
		cfgTemplate("pdu", "name=pdu\nagent_name=fence_apc_snmp\nipaddr=10.0.0.3\nusername=admin\npassword=s3cret-pw\nmust_sucess=yes"),
		cfgTemplate("switch", "driver=brocade\nip=10.0.0.2\nusername=admin\npassword=s3cret-pw"),
		cfgMethod("port-off", "n1", "template=switch\nplug=7\naction=off"),
		cfgMethod("pdu-off", "n1", "template=fence-method-template-pdu\nplug=1\naction=off"),
		cfgMethod("pdu-on", "n1", "template=pdu\nplug=1\naction=on"),
		cfgNode("n1", "node_name=n1\nisolation=port-off\npower_management=pdu-off pdu-on"),
	}
}

// replace returns cms with the ConfigMaps of the same names replaced by
// repl, and those with new names appended.
func replace(cms []config.ConfigMap, repl ...config.ConfigMap) []config.ConfigMap {
	out := append([]config.ConfigMap(nil), cms...)
outer:
	for _, r := range repl {
		for i := range out {
			if out[i].Name == r.Name {
				out[i] = r
				continue outer
			}
		}
		out = append(out, r)
	}
	return out
}

// cfgDevice is a plug that follows Set at once.
type cfgDevice struct {
	mu     sync.Mutex
	state  fence.State
	closed bool
}

func (d *cfgDevice) Status(context.Context, string) (fence.State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state, nil
}

func (d *cfgDevice) Set(_ context.Context, _ string, s fence.State) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state = s
	return nil
}

func (d *cfgDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// cfgRegistry registers the drivers the test configurations use. Opening a
// method whose plug is "fail" fails. Every device opened is recorded.
func cfgRegistry(t *testing.T) (*fence.Registry, *[]*cfgDevice) {
	t.Helper()
	reg := fence.NewRegistry()
	var devs []*cfgDevice
	open := func(_ context.Context, o fence.OpenOptions) (fence.Device, error) {
		if o.Params["plug"] == "fail" {
			return nil, errors.New("cannot reach the device")
		}
		d := &cfgDevice{state: fence.StateOn}
		devs = append(devs, d)
		return d, nil
	}
	for _, d := range []fence.Driver{
		// The stubs take any parameter; TestValidateKeys has a strict one.
		{Name: "apc", Agents: []string{"fence_apc_snmp"}, Open: open, OpenParams: true},
		{Name: "eaton", Agents: []string{"fence_eaton_snmp"}, Open: open, OpenParams: true},
		{Name: "brocade", Agents: []string{"fence_brocade"}, Open: open, OpenParams: true},
		{Name: "ipmi", Agents: []string{"fence_ipmilan"}, Open: open,
			Params: []fence.ParamSpec{{Name: "privlvl", Aliases: []string{"privilege"}, Required: true}}},
	} {
		require.NoError(t, reg.Register(d))
	}
	return reg, &devs
}

func TestLoadConfigMapsDesign(t *testing.T) {
	cms := cfgLoadFile(t, "design-example.yaml")
	var names []string
	for _, cm := range cms {
		names = append(names, cm.Name)
	}
	assert.Equal(t, []string{
		"fence-method-template-fc-switch-brocade",
		"fence-method-template-apc-pdu",
		"fence-method-template-eaton-pdu",
		"fence-method-eaton-off-host0",
		"fence-method-eaton-on-host0",
		"fence-method-eaton-off-host1",
		"fence-method-eaton-on-host1",
		"fence-config-lago-kube-host0",
		"fence-config-host1",
	}, names)
	assert.Equal(t, "default", cms[0].Namespace)
	assert.Equal(t, "", cms[8].Namespace, "the node-fencing design's fence-config-host1 has no namespace")
	assert.Equal(t, "template=fence-method-template-eaton-pdu\nplug=1\naction=off", cms[3].Data["method.properties"])
}

// TestParseConfigDesignExample parses the design's example configuration as
// written. It is refused: fence-config-host1 says node_name=host, and most
// methods it lists have no ConfigMap.
func TestParseConfigDesignExample(t *testing.T) {
	cfg, err := config.Parse(cfgLoadFile(t, "design-example.yaml"))
	assert.Nil(t, cfg)
	errs := cfgErrors(t, err)

	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s|%s|%d|%s", e.ConfigMap, e.Key, e.Line, e.Node))
	}
	assert.ElementsMatch(t, []string{
		"fence-config-host1|node_name|1|host1",
		"fence-config-host1|isolation|2|host1",
		"fence-config-host1|recovery|4|host1",
		"fence-config-lago-kube-host0|isolation|2|lago-kube-host0",
		"fence-config-lago-kube-host0|power_management|3|lago-kube-host0",
		"fence-config-lago-kube-host0|power_management|3|lago-kube-host0",
		"fence-config-lago-kube-host0|recovery|4|lago-kube-host0",
	}, got)

	var mismatch *config.Error
	for _, e := range errs {
		if errors.Is(e, config.ErrNodeMismatch) {
			mismatch = e
		}
	}
	require.NotNil(t, mismatch, "the host/host1 mismatch must be reported")
	msg := mismatch.Error()
	assert.Contains(t, msg, "fence-config-host1")
	assert.Contains(t, msg, "node_name")
	assert.Contains(t, msg, `"host"`)
	assert.Contains(t, msg, `"host1"`)
	assert.Contains(t, err.Error(), "no ConfigMap fence-method-fc-off-host1")
	assert.Contains(t, err.Error(), "no ConfigMap fence-method-eaton-on-lago-kube-host0")
}

// TestParseConfigDesignAdmin parses the "Admin experience" example: its
// fence-config-host1 lists methods of which only fence-method-fc-on-host0
// (for another node) exists.
func TestParseConfigDesignAdmin(t *testing.T) {
	cfg, err := config.Parse(cfgLoadFile(t, "design-admin.yaml"))
	assert.Nil(t, cfg)
	errs := cfgErrors(t, err)
	require.Len(t, errs, 4)
	for _, e := range errs {
		assert.Equal(t, "fence-config-host1", e.ConfigMap)
		assert.Equal(t, "host1", e.Node)
	}
	// The method ConfigMap for host0 and its template are fine: fixing the
	// node's config alone makes the whole parse.
	cms := cfgLoadFile(t, "design-admin.yaml")
	cms = replace(cms, cfgNode("host0", "node_name=host0\nrecovery=fc-on"))
	cms = cms[1:] // drop fence-config-host1
	cfg, err = config.Parse(cms)
	require.NoError(t, err)
	driver, p, err := cfg.MethodParams("host0", "fc-on")
	require.NoError(t, err)
	assert.Equal(t, "fence_brocade", driver)
	assert.Equal(t, fence.Params{
		"name": "fc_switch_brocade", "agent_name": "fence_brocade", "ipaddr": "192.168.1.2",
		"password": "brocade_password", "username": "brocade_admin", "plug": "2",
	}, p)
}

func TestParseConfigTwoNodes(t *testing.T) {
	cfg, err := config.Parse(cfgLoadFile(t, "two-nodes.yaml"))
	require.NoError(t, err)
	assert.Equal(t, []string{"host0", "host1"}, cfg.Nodes())

	n, ok := cfg.Node("host1")
	require.True(t, ok)
	assert.Equal(t, "host1", n.Node)
	assert.Equal(t, "fence-config-host1", n.ConfigMap)
	assert.Equal(t, map[fence.Step][][]string{
		fence.StepIsolation:       {{"fc-off"}},
		fence.StepPowerManagement: {{"eaton-off", "eaton-on"}},
		fence.StepRecovery:        {{"fc-on"}},
	}, n.Steps)
	assert.Equal(t, [][]string{{"eaton-off", "eaton-on"}}, n.Methods(fence.StepPowerManagement))
	assert.False(t, n.Kdump)

	driver, p, err := cfg.MethodParams("host1", "eaton-off")
	require.NoError(t, err)
	assert.Equal(t, "fence_eaton_snmp", driver)
	assert.Equal(t, fence.Params{
		"name": "eaton_pdu", "agent_name": "fence_eaton_snmp", "must_sucess": "yes",
		"ipaddr": "192.168.1.4", "password": "eaton_password", "username": "eaton_admin",
		"snmp_priv_prot": "AES", "snmp_priv_passwd": "eaton_snmp_passwd", "snmp_sec_level": "authPriv",
		"inet4_only": "true", "plug": "2", "action": "off",
	}, p)

	reg, _ := cfgRegistry(t)
	require.NoError(t, cfg.Validate(reg))
	levels, err := cfg.Levels(context.Background(), reg, "host0", fence.StepPowerManagement, nil)
	require.NoError(t, err)
	require.Len(t, levels, 1)
	require.Len(t, levels[0].Methods, 2)
	off, on := levels[0].Methods[0], levels[0].Methods[1]
	assert.Equal(t, "eaton-off", off.Name)
	assert.Equal(t, "host0", off.Node)
	assert.Equal(t, "eaton", off.Driver)
	assert.Equal(t, "1", off.Plug)
	assert.Equal(t, fence.ActionOff, off.Action)
	assert.Equal(t, fence.ActionOn, on.Action)
	assert.False(t, off.BestEffort, "must_sucess=yes")

	res, err := fence.DoLevels(context.Background(), "host0", levels, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced)
}

func TestTemplateOverride(t *testing.T) {
	cms := []config.ConfigMap{
		cfgTemplate("pdu", "name=pdu\nagent_name=fence_apc_snmp\nipaddr=10.0.0.3\nlogin=admin\npassword=s3cret-pw\nmust_sucess=yes\npower_timeout=30\nplug=99"),
		cfgMethod("off", "n1", "template=pdu\nplug=4\nip=10.0.0.4\nusername=root\nmust_succeed=no\ndriver=eaton\nPower-Timeout=5"),
		cfgNode("n1", "power_management=off"),
	}
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	driver, p, err := cfg.MethodParams("n1", "off")
	require.NoError(t, err)
	assert.Equal(t, "eaton", driver, "the method's driver= overrides the template's agent_name=")
	assert.Equal(t, fence.Params{
		"name": "pdu", "password": "s3cret-pw",
		"plug": "4", "ip": "10.0.0.4", "username": "root", "must_succeed": "no", "driver": "eaton", "power_timeout": "5",
	}, p, "method keys override template keys and their aliases; template= is left out")

	reg, _ := cfgRegistry(t)
	levels, err := cfg.Levels(context.Background(), reg, "n1", fence.StepPowerManagement, nil)
	require.NoError(t, err)
	m := levels[0].Methods[0]
	assert.Equal(t, "eaton", m.Driver)
	assert.True(t, m.BestEffort, "must_succeed=no in the method overrides must_sucess=yes in the template")
	assert.Equal(t, "4", m.Plug)
	assert.Equal(t, int64(5e9), int64(m.Options.PowerTimeout))

	// MethodParams returns a copy.
	p["plug"] = "changed"
	_, p2, _ := cfg.MethodParams("n1", "off")
	assert.Equal(t, "4", p2["plug"])
}

func TestLevelsExtension(t *testing.T) {
	cms := replace(cfgBase(),
		cfgMethod("ipmi", "n1", "address=ipmi://10.0.1.1\nprivlvl=operator\naction=off"),
		cfgMethod("port-off-b", "n1", "template=switch\nplug=8\naction=off"),
		cfgNode("n1", "node_name=n1\n"+
			"isolation=port-off\n"+
			"isolation.2=port-off-b\n"+
			"Power-Management=pdu-off pdu-on\n"+
			"power_management.2=ipmi\n"+
			"power_management.3=pdu-off\n"+
			"recover=\n"+
			"kdump_enabled=yes"),
	)
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	n, ok := cfg.Node("n1")
	require.True(t, ok)
	assert.Equal(t, map[fence.Step][][]string{
		fence.StepIsolation:       {{"port-off"}, {"port-off-b"}},
		fence.StepPowerManagement: {{"pdu-off", "pdu-on"}, {"ipmi"}, {"pdu-off"}},
	}, n.Steps)
	assert.True(t, n.Kdump)

	driver, _, err := cfg.MethodParams("n1", "ipmi")
	require.NoError(t, err)
	assert.Equal(t, "ipmi", driver, "the address's scheme names the driver")

	reg, devs := cfgRegistry(t)
	require.NoError(t, cfg.Validate(reg))
	levels, err := cfg.Levels(context.Background(), reg, "n1", fence.StepPowerManagement, nil)
	require.NoError(t, err)
	require.Len(t, levels, 3)
	var names [][]string
	for _, l := range levels {
		var ns []string
		for _, m := range l.Methods {
			ns = append(ns, m.Name+"/"+m.Driver)
		}
		names = append(names, ns)
	}
	assert.Equal(t, [][]string{{"pdu-off/apc", "pdu-on/apc"}, {"ipmi/ipmi"}, {"pdu-off/apc"}}, names)
	assert.Len(t, *devs, 4)

	levels, err = cfg.Levels(context.Background(), reg, "n1", fence.StepRecovery, nil)
	require.NoError(t, err)
	assert.Empty(t, levels, "recover= is an empty step")
}

func TestNodeReturnsACopy(t *testing.T) {
	cfg, err := config.Parse(cfgBase())
	require.NoError(t, err)
	n, _ := cfg.Node("n1")
	n.Steps[fence.StepIsolation][0][0] = "changed"
	n.Steps[fence.StepRecovery] = [][]string{{"x"}}
	n2, _ := cfg.Node("n1")
	assert.Equal(t, [][]string{{"port-off"}}, n2.Steps[fence.StepIsolation])
	assert.NotContains(t, n2.Steps, fence.StepRecovery)
	_, ok := cfg.Node("nope")
	assert.False(t, ok)
}

func TestParseConfigIgnores(t *testing.T) {
	cms := replace(cfgBase(),
		config.ConfigMap{Name: "kube-root-ca.crt", Data: map[string]string{"ca.crt": "x"}},
		config.ConfigMap{Name: "cluster-fence-config", Data: map[string]string{"config.properties": "garbage=\\q"}},
		config.ConfigMap{Name: "fence-controller-settings", Data: map[string]string{"x": "y"}},
		// extra data keys are ignored
		config.ConfigMap{Name: "fence-config-n1", Data: map[string]string{
			"config.properties": "isolation=port-off",
			"README":            "notes",
		}},
		// a method no node lists is still read
		cfgMethod("spare", "n1", "template=pdu\nplug=5"),
	)
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	assert.Equal(t, []string{"n1"}, cfg.Nodes())
	_, _, err = cfg.MethodParams("n1", "spare")
	assert.ErrorIs(t, err, config.ErrMethodNotConfigured, "only the methods a node lists are its methods")

	cfg, err = config.Parse(nil)
	require.NoError(t, err)
	assert.Empty(t, cfg.Nodes())
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cms   []config.ConfigMap
		cm    string // the ConfigMap the error names
		key   string // the key it names
		line  int
		node  string
		msg   string // a substring of the message
		is    error
		count int // expected number of errors; 0 means 1
	}{
		{
			name: "node_name names another node",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nnode_name=n2")),
			cm:   "fence-config-n1", key: "node_name", line: 2, node: "n1", msg: `node_name "n2"`, is: config.ErrNodeMismatch,
		},
		{
			name: "unknown key in config.properties",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nisolaton=port-off")),
			cm:   "fence-config-n1", key: "isolaton", line: 2, node: "n1", msg: "unknown key",
		},
		{
			name: "level beyond 9",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nisolation.10=port-off")),
			cm:   "fence-config-n1", key: "isolation.10", line: 2, msg: "from 2 to 9",
		},
		{
			name: "level that is not a number",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nisolation.b=port-off")),
			cm:   "fence-config-n1", key: "isolation.b", line: 2,
		},
		{
			name: "level 1 twice",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nisolation.1=port-off")),
			cm:   "fence-config-n1", key: "isolation.1", line: 2, msg: "same as isolation on line 1",
		},
		{
			name: "recover and recovery",
			cms:  replace(cfgBase(), cfgNode("n1", "recovery=port-off\nrecover=port-off")),
			cm:   "fence-config-n1", key: "recover", line: 2,
		},
		{
			name: "level gap",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nisolation.3=port-off")),
			cm:   "fence-config-n1", key: "isolation.3", line: 2, msg: "not level 2",
		},
		{
			name: "fallback level without level 1",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=\nisolation.2=port-off")),
			cm:   "fence-config-n1", key: "isolation.2", line: 2, msg: "not level 1",
		},
		{
			name: "empty fallback level",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nisolation.2=")),
			cm:   "fence-config-n1", key: "isolation.2", line: 2, msg: "no methods",
		},
		{
			name: "method names separated by commas",
			cms:  replace(cfgBase(), cfgNode("n1", "power_management=pdu-off,pdu-on")),
			cm:   "fence-config-n1", key: "power_management", line: 1, msg: `"pdu-off,pdu-on"`,
		},
		{
			name: "method name in upper case",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=Port-Off")),
			cm:   "fence-config-n1", key: "isolation", msg: "lower case",
		},
		{
			name: "method name that looks like a template",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=template-x")),
			cm:   "fence-config-n1", key: "isolation", msg: "template-",
		},
		{
			name: "bad kdump",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\nkdump=maybe")),
			cm:   "fence-config-n1", key: "kdump", line: 2,
		},
		{
			name: "kdump twice",
			cms:  replace(cfgBase(), cfgNode("n1", "kdump=yes\nkdump_enabled=no")),
			cm:   "fence-config-n1", key: "kdump_enabled", line: 2,
		},
		{
			name: "listed method without a ConfigMap",
			cms:  replace(cfgBase(), cfgNode("n1", "isolation=port-off\n\npower_management=pdu-off pdu-cycle")),
			cm:   "fence-config-n1", key: "power_management", line: 3, node: "n1", msg: "no ConfigMap fence-method-pdu-cycle-n1",
		},
		{
			name: "missing template, full name",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "plug=1\ntemplate=fence-method-template-pdu2")),
			cm:   "fence-method-pdu-off-n1", key: "template", line: 2, msg: "no ConfigMap fence-method-template-pdu2",
		},
		{
			name: "missing template, short name",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu2\nplug=1")),
			cm:   "fence-method-pdu-off-n1", key: "template", line: 1, msg: "no ConfigMap fence-method-template-pdu2",
		},
		{
			name: "empty template",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=\nplug=1")),
			cm:   "fence-method-pdu-off-n1", key: "template", line: 1,
		},
		{
			name: "template naming a template",
			cms:  replace(cfgBase(), cfgTemplate("pdu", "template=switch\nagent_name=fence_apc_snmp")),
			cm:   "fence-method-template-pdu", key: "template", line: 1,
		},
		{
			name: "method without a driver",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "ipaddr=10.0.0.9\nplug=1\npassword=s3cret-pw")),
			cm:   "fence-method-pdu-off-n1", key: "agent_name", msg: "no driver",
		},
		{
			name: "template without a driver",
			cms:  replace(cfgBase(), cfgTemplate("switch", "ip=10.0.0.2\nusername=admin\npassword=s3cret-pw")),
			cm:   "fence-method-port-off-n1", key: "agent_name", msg: "no driver",
		},
		{
			name: "empty driver",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\nagent_name=")),
			cm:   "fence-method-pdu-off-n1", key: "agent_name", line: 2,
		},
		{
			name: "bad port in the template",
			cms:  replace(cfgBase(), cfgTemplate("switch", "driver=brocade\nip=10.0.0.2\nipport=99999\npassword=s3cret-pw")),
			cm:   "fence-method-template-switch", key: "ipport", line: 3,
		},
		{
			name: "credentials in the address",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\naddress=apc://admin:s3cret-pw@10.0.0.3")),
			cm:   "fence-method-pdu-off-n1", key: "address", line: 2, msg: "credentials",
		},
		{
			name: "bad timeout",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\npower-timeout=soon")),
			cm:   "fence-method-pdu-off-n1", key: "power_timeout", line: 2,
		},
		{
			name: "bad action",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\naction=explode")),
			cm:   "fence-method-pdu-off-n1", key: "action", line: 2,
		},
		{
			name: "bad must_sucess in the template",
			cms:  replace(cfgBase(), cfgTemplate("pdu", "agent_name=fence_apc_snmp\nip=10.0.0.3\npassword=s3cret-pw\nmust_sucess=perhaps")),
			cm:   "fence-method-template-pdu", key: "must_sucess", line: 4,
		},
		{
			name: "config without config.properties",
			cms:  replace(cfgBase(), config.ConfigMap{Name: "fence-config-n1", Data: map[string]string{"config.propertes": "isolation=port-off"}}),
			cm:   "fence-config-n1", key: "config.properties",
		},
		{
			name: "method without method.properties",
			cms:  replace(cfgBase(), config.ConfigMap{Name: "fence-method-pdu-off-n1", Data: map[string]string{"template.properties": "template=pdu"}}),
			cm:   "fence-method-pdu-off-n1", key: "method.properties",
		},
		{
			name: "template without template.properties",
			cms:  replace(cfgBase(), config.ConfigMap{Name: "fence-method-template-pdu"}),
			cm:   "fence-method-template-pdu", key: "template.properties",
		},
		{
			name: "bad unicode escape in a password",
			cms:  replace(cfgBase(), cfgTemplate("pdu", "agent_name=fence_apc_snmp\nip=10.0.0.3\npassword=s3cret\\u12")),
			cm:   "fence-method-template-pdu", key: "password", line: 3, msg: `\u`,
		},
		{
			name: "duplicate key",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\nplug=1\naction=off\nplug=2")),
			cm:   "fence-method-pdu-off-n1", key: "plug", line: 4, msg: "line 2",
		},
		{
			name: "duplicate after canonicalisation",
			cms:  replace(cfgBase(), cfgTemplate("pdu", "agent_name=fence_eaton_snmp\nip=10.0.0.4\nsnmp-priv-prot=AES\nsnmp_priv_prot=DES")),
			cm:   "fence-method-template-pdu", key: "snmp_priv_prot", line: 4, msg: "snmp-priv-prot on line 3",
		},
		{
			name: "duplicate through an alias",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\nip=10.0.0.5\nipaddr=10.0.0.6")),
			cm:   "fence-method-pdu-off-n1", key: "ipaddr", line: 3,
		},
		{
			name: "must_sucess and must_succeed together",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\nmust_succeed=yes\nmust_sucess=no")),
			cm:   "fence-method-pdu-off-n1", key: "must_sucess", line: 3,
		},
		{
			name: "password defined twice",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\npassword=s3cret-pw\npasswd=s3cret-pw")),
			cm:   "fence-method-pdu-off-n1", key: "passwd", line: 3,
		},
		{
			name: "empty key",
			cms:  replace(cfgBase(), cfgMethod("pdu-off", "n1", "template=pdu\n=s3cret-pw")),
			cm:   "fence-method-pdu-off-n1", line: 2, msg: "empty key",
		},
		{
			name: "ConfigMap given twice",
			cms:  append(cfgBase(), cfgMethod("pdu-on", "n1", "template=pdu\nplug=2")),
			cm:   "fence-method-pdu-on-n1", msg: "twice",
		},
		{
			name: "nothing after the prefix",
			cms:  append(cfgBase(), cfgNode("", "isolation=x")),
			cm:   "fence-config-",
		},
		{
			name: "one method ConfigMap for two nodes",
			cms: append(cfgBase(),
				cfgNode("a", "isolation=x-b"),
				cfgNode("b-a", "isolation=x"),
				cfgMethod("x-b", "a", "template=pdu\nplug=3")),
			cm: "fence-method-x-b-a", node: "b-a", msg: `node "a" as method "x-b" and node "b-a" as method "x"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse(tt.cms)
			assert.Nil(t, cfg, "nothing half-parsed is returned")
			errs := cfgErrors(t, err)
			want := max(tt.count, 1)
			require.Len(t, errs, want, "%v", err)
			e := errs[0]
			assert.Equal(t, tt.cm, e.ConfigMap, "%v", e)
			assert.Equal(t, tt.key, e.Key, "%v", e)
			if tt.line != 0 {
				assert.Equal(t, tt.line, e.Line, "%v", e)
			}
			if tt.node != "" {
				assert.Equal(t, tt.node, e.Node, "%v", e)
			}
			msg := e.Error()
			assert.Contains(t, msg, tt.cm)
			if tt.key != "" {
				assert.Contains(t, msg, tt.key)
			}
			if tt.msg != "" {
				assert.Contains(t, msg, tt.msg)
			}
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestParseConfigCollectsAllErrors(t *testing.T) {
	cms := replace(cfgBase(),
		cfgNode("n1", "node_name=n2\nisolation=port-off gone\nbogus=1"),
		cfgMethod("pdu-off", "n1", "template=nope\nplug=1"),
		cfgTemplate("switch", "driver=brocade\nip=10.0.0.2\npassword=s3cret\\u12"),
	)
	cfg, err := config.Parse(cms)
	assert.Nil(t, cfg)
	errs := cfgErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.ConfigMap+"|"+e.Key)
	}
	assert.ElementsMatch(t, []string{
		"fence-method-template-switch|password",
		"fence-config-n1|node_name",
		"fence-config-n1|bogus",
		"fence-config-n1|isolation", // method gone
		"fence-method-pdu-off-n1|template",
	}, got)
}

func TestConfigErrorMessage(t *testing.T) {
	e := &config.Error{ConfigMap: "fence-method-x-n1", Key: "plug", Line: 3, Node: "n1", Err: errors.New("bad")}
	assert.Equal(t, "fence config: configmap fence-method-x-n1, line 3, key plug, node n1: bad", e.Error())
	assert.ErrorIs(t, e, fence.ErrConfig)
	e = &config.Error{Err: errors.New("bad")}
	assert.Equal(t, "fence config: bad", e.Error())
}

func TestMethodParamsErrors(t *testing.T) {
	cfg, err := config.Parse(cfgBase())
	require.NoError(t, err)
	_, _, err = cfg.MethodParams("n2", "pdu-off")
	assert.ErrorIs(t, err, config.ErrNodeNotConfigured)
	assert.ErrorIs(t, err, fence.ErrConfig)
	_, _, err = cfg.MethodParams("n1", "pdu-cycle")
	assert.ErrorIs(t, err, config.ErrMethodNotConfigured)
	assert.Contains(t, err.Error(), "fence-config-n1")

	reg, _ := cfgRegistry(t)
	_, err = cfg.Levels(context.Background(), reg, "n2", fence.StepIsolation, nil)
	assert.ErrorIs(t, err, config.ErrNodeNotConfigured)
	_, err = cfg.Levels(context.Background(), reg, "n1", fence.Step(0), nil)
	assert.ErrorIs(t, err, fence.ErrConfig)
}

func TestLevelsClosesWhatItOpened(t *testing.T) {
	cms := replace(cfgBase(),
		cfgMethod("bad", "n1", "template=pdu\nplug=fail"),
		cfgNode("n1", "power_management=pdu-off pdu-on\npower_management.2=port-off bad"),
	)
	cfg, err := config.Parse(cms)
	require.NoError(t, err)
	reg, devs := cfgRegistry(t)
	levels, err := cfg.Levels(context.Background(), reg, "n1", fence.StepPowerManagement, nil)
	assert.Nil(t, levels)
	var fe *fence.Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "bad", fe.Method)
	assert.Equal(t, "n1", fe.Node)
	require.Len(t, *devs, 3)
	for _, d := range *devs {
		assert.True(t, d.closed)
	}

	// A driver that is not registered is Open's error, after closing.
	reg2 := fence.NewRegistry()
	_, err = cfg.Levels(context.Background(), reg2, "n1", fence.StepPowerManagement, nil)
	assert.ErrorIs(t, err, fence.ErrUnknownDriver)
}

func TestValidate(t *testing.T) {
	reg, devs := cfgRegistry(t)
	cfg, err := config.Parse(cfgBase())
	require.NoError(t, err)
	require.NoError(t, cfg.Validate(reg))
	assert.Empty(t, *devs, "Validate opens nothing")

	cms := replace(cfgBase(),
		cfgTemplate("pdu", "agent_name=fence_wti\nipaddr=10.0.0.3\npassword=s3cret-pw"),
		cfgMethod("port-off", "n1", "template=switch\naddress=ipmi://10.0.0.2\nplug=7"),
		cfgMethod("bmc", "n1", "address=ipmi://10.0.1.1\npassword=s3cret-pw"),
		cfgNode("n1", "isolation=port-off\npower_management=pdu-off pdu-on\npower_management.2=bmc"),
	)
	cfg, err = config.Parse(cms)
	require.NoError(t, err)
	errs := cfgErrors(t, cfg.Validate(reg))
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s|%s|%d|%s", e.ConfigMap, e.Key, e.Line, e.Node))
	}
	assert.Equal(t, []string{
		"fence-method-bmc-n1|privlvl|0|n1",          // required by the ipmi driver
		"fence-method-template-pdu|agent_name|1|n1", // fence_wti is not registered; once for pdu-off and pdu-on
		"fence-method-port-off-n1|address|2|n1",     // ipmi scheme, brocade driver
	}, got)
	assert.ErrorIs(t, errs[1], fence.ErrUnknownDriver)
	assert.Contains(t, errs[1].Error(), "fence_wti")
	assert.Empty(t, *devs)
}

func TestStep(t *testing.T) {
	for s, want := range map[fence.Step]string{
		fence.StepIsolation: "isolation", fence.StepPowerManagement: "power_management", fence.StepRecovery: "recovery", fence.Step(9): "step(9)",
	} {
		assert.Equal(t, want, s.String())
	}
	assert.Equal(t, []fence.Step{fence.StepIsolation, fence.StepPowerManagement, fence.StepRecovery}, fence.Steps())
	for in, want := range map[string]fence.Step{
		"isolation": fence.StepIsolation, "Isolation": fence.StepIsolation,
		"power_management": fence.StepPowerManagement, "power-management": fence.StepPowerManagement,
		"Power-Management": fence.StepPowerManagement, "power_managment": fence.StepPowerManagement,
		"recovery": fence.StepRecovery, "recover": fence.StepRecovery, " Recovery ": fence.StepRecovery,
	} {
		got, err := fence.ParseStep(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "power", "pm", "recovered", "isolation.2"} {
		_, err := fence.ParseStep(in)
		assert.ErrorIs(t, err, fence.ErrConfig, in)
	}
}

const cfgSmallYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: fence-config-n1
  namespace: default
data:
  config.properties: |
    isolation=port-off
`

func TestLoadConfigMapsForms(t *testing.T) {
	want := []config.ConfigMap{{Name: "fence-config-n1", Namespace: "default", Data: map[string]string{"config.properties": "isolation=port-off\n"}}}
	two := append(append([]config.ConfigMap(nil), want...), config.ConfigMap{Name: "fence-config-n2", Data: map[string]string{"config.properties": "isolation=port-off\n"}})
	js, err := json.Marshal(want[0])
	require.NoError(t, err)
	js2, err := json.Marshal(two[1])
	require.NoError(t, err)

	tests := []struct {
		name string
		in   string
		want []config.ConfigMap
	}{
		{"single", cfgSmallYAML, want},
		{"multi-document", "---\n" + cfgSmallYAML + "---\n# nothing\n---\n" + strings.ReplaceAll(strings.ReplaceAll(cfgSmallYAML, "n1", "n2"), "  namespace: default\n", "") + "...\n", two},
		{"list", "- " + strings.ReplaceAll(strings.TrimSuffix(cfgSmallYAML, "\n"), "\n", "\n  ") + "\n", want},
		{"kind List", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(cfgSmallYAML, "\n"), "\n", "\n  ") + "\n- kind: Secret\n  metadata: {name: x}\n", want},
		{"CRLF", strings.ReplaceAll(cfgSmallYAML, "\n", "\r\n"), []config.ConfigMap{{Name: "fence-config-n1", Namespace: "default", Data: map[string]string{"config.properties": "isolation=port-off\n"}}}},
		{"other kinds skipped", "kind: Secret\nmetadata:\n  name: fence-config-n1\n---\n" + cfgSmallYAML, want},
		{"JSON", string(js), want},
		{"JSON stream", string(js) + "\n" + string(js2), two},
		{"JSON array", "[" + string(js) + "," + string(js2) + "]", two},
		{"JSON List", `{"kind":"ConfigMapList","apiVersion":"v1","items":[` + string(js) + `]}`, want},
		{"YAML flow", "{kind: ConfigMap, metadata: {name: fence-config-n1, namespace: default}, data: {config.properties: \"isolation=port-off\\n\"}}", want},
		{"empty", "  \n", nil},
		{"comments only", "# nothing\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.LoadConfigMaps(strings.NewReader(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLoadConfigMapsJSONParses(t *testing.T) {
	b, err := json.Marshal(map[string]any{"kind": "List", "items": cfgBase()})
	require.NoError(t, err)
	cms, err := config.LoadConfigMaps(strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Equal(t, cfgBase(), cms)
	cfg, err := config.Load(strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Equal(t, []string{"n1"}, cfg.Nodes())
}

func TestLoadConfigMapsErrors(t *testing.T) {
	tests := []struct {
		name, in, msg, key string
	}{
		{"no name", "- kind: ConfigMap\n  data: {a: b}\n- kind: ConfigMap\n  metadata: {name: ok}\n", "item 1: ConfigMap without a name", "metadata.name"},
		{"no kind", "metadata: {name: fence-config-n1}\ndata: {a: b}\n", "without a kind", "kind"},
		{"bad YAML", "kind: ConfigMap\n  metadata: [\n", "line 1", ""},
		{"duplicate YAML key", "kind: ConfigMap\nmetadata: {name: x}\ndata:\n  config.properties: a\n  config.properties: b\n", "config.properties", ""},
		{"data that is not a string", "kind: ConfigMap\nmetadata: {name: x}\ndata:\n  password: 12345\n", "string", ""},
		{"scalar document", "hello\n", "neither", ""},
		{"bad JSON", `{"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": 1}`, "JSON", ""},
		{"second document", cfgSmallYAML + "---\nkind: ConfigMap\n", "line 9", "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cms, err := config.LoadConfigMaps(strings.NewReader(tt.in))
			assert.Nil(t, cms)
			errs := cfgErrors(t, err)
			assert.Contains(t, err.Error(), tt.msg)
			assert.NotContains(t, err.Error(), "12345")
			assert.Equal(t, tt.key, errs[0].Key)
		})
	}
}

func TestConfigMapJSON(t *testing.T) {
	cm := config.ConfigMap{Name: "fence-config-n1", Namespace: "ns", Data: map[string]string{"config.properties": "isolation=x"}}
	b, err := json.Marshal(cm)
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"fence-config-n1","namespace":"ns"},"data":{"config.properties":"isolation=x"}}`, string(b))
	var back config.ConfigMap
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, cm, back)
	assert.Error(t, json.Unmarshal([]byte(`{"kind":"Secret"}`), &back))
	require.NoError(t, json.Unmarshal([]byte(`{"metadata":{"name":"x"}}`), &back), "no kind is fine")
	assert.Equal(t, "x", back.Name)
}

func TestParseConfigPartial(t *testing.T) {
	cms := []config.ConfigMap{
		{Name: "fence-method-template-pdu", Data: map[string]string{"template.properties": "driver=fake\naddress=fake://partial\n"}},
		{Name: "fence-method-off-a", Data: map[string]string{"method.properties": "template=pdu\nplug=1\n"}},
		{Name: "fence-config-a", Data: map[string]string{"config.properties": "node_name=a\npower_management=off\n"}},
		{Name: "fence-config-b", Data: map[string]string{"config.properties": "node_name=b\npower_management=missing\n"}},
	}
	_, err := config.Parse(cms)
	require.Error(t, err)
	cfg, perr := config.ParsePartial(cms)
	require.NotNil(t, cfg)
	assert.Equal(t, err.Error(), perr.Error(), "the same errors")
	assert.Equal(t, []string{"a"}, cfg.Nodes(), "the valid node kept")
	assert.NoError(t, config.ErrorsFor(perr, "a"))
	be := config.ErrorsFor(perr, "b")
	require.Error(t, be)
	assert.Contains(t, be.Error(), "fence-method-missing-b")
}
