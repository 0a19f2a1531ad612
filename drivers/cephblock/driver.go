package cephblock

import (
	"context"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fencegroup"
)

// Driver is the driver this package registers in fence's default registry
// under the name "cephblock": storage isolation through a Ceph cluster's
// client blocklist. No ClusterLabs agent does this; Rook does it for the
// out-of-service taint (CSI-Addons' NetworkFence).
//
// It takes no address (the cluster's monitors from conf), or
// cephblock://HOST[:PORT] for one monitor (ceph -m). Beyond
// fence.CommonParams it takes:
//
//   - plug (required): the node's addresses and CIDRs, separated by commas,
//     or @node-addresses (fence.PlugNodeAddresses: the InternalIP
//     addresses of the node's Node object, filled in by the controller);
//   - conf: the cluster's configuration file (ceph --conf);
//   - cluster: the cluster's name (ceph --cluster);
//   - id: the client's name, without "client." (ceph --id), whose
//     capabilities allow osd blocklist (mon "allow command \"osd
//     blocklist\"");
//   - keyring: the client's keyring file (ceph --keyring);
//   - ceph_path: the ceph binary (default: ceph, from PATH);
//   - expire (seconds, default five years): how long an off's entries
//     last;
//   - max_addresses (default 16): the most addresses one CIDR of the plug
//     may cover;
//   - allow_loopback (default false): accept loopback addresses in the
//     plug, for a Ceph cluster whose clients share its host (a test
//     cluster); a node's address never is one.
//
// The plug is checked with the parameters (fencectl validate, a fence
// ConfigMap's validation, the controller's check), not first when the node
// must be fenced.
var Driver = fence.Driver{
	Name:          "cephblock",
	Description:   "Ceph client blocklist: isolates a node from its Ceph storage by blocklisting its addresses (ceph osd blocklist), as Rook's network fence does",
	DefaultAction: fence.ActionOff,
	IOTimeout:     30 * time.Second,
	Params: []fence.ParamSpec{
		{Name: "plug", Aliases: []string{"port"}, Description: "The node's addresses and CIDRs, comma-separated, or @node-addresses (the Node object's InternalIP addresses)", Type: "string", Required: true},
		{Name: "conf", Description: "Ceph configuration file (ceph --conf)", Type: "string"},
		{Name: "cluster", Description: "Ceph cluster name (ceph --cluster)", Type: "string"},
		{Name: "id", Description: "Ceph client name without client. (ceph --id)", Type: "string"},
		{Name: "keyring", Description: "The client's keyring file (ceph --keyring)", Type: "string"},
		{Name: "ceph_path", Description: "Path to the ceph binary", Type: "string", Default: "ceph"},
		{Name: "expire", Description: "How long an off's blocklist entries last, in seconds", Type: "second", Default: "157680000"},
		{Name: "max_addresses", Description: "The most addresses one CIDR of the plug may cover", Type: "integer", Default: "16"},
		{Name: "allow_loopback", Description: "Accept loopback addresses in the plug (a Ceph cluster whose clients share its host)", Type: "boolean", Default: "false"},
	},
	Check: check,
	Open:  open,
}

func init() { fence.Register(Driver) }

func check(a fence.Address, p fence.Params) error {
	o, err := OptionsFromParams(a, p)
	if err != nil {
		return err
	}
	d, err := New(o)
	if err != nil {
		return err
	}
	if plug, ok := p.Get("plug"); ok && plug != PlugNodeAddresses {
		if _, err := d.prefixes(plug); err != nil {
			return &fence.ParamError{Key: "plug", Value: plug, Reason: strings.TrimPrefix(err.Error(), fence.ErrUnknownPlug.Error()+": ")}
		}
	}
	return nil
}

func open(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := OptionsFromParams(oo.Address, oo.Params)
	if err != nil {
		return nil, err
	}
	return New(o)
}

// OptionsFromParams reads Options from a method's address and parameters
// (see Driver). Errors are *fence.ParamError values naming the parameter.
func OptionsFromParams(a fence.Address, p fence.Params) (Options, error) {
	var o Options
	bad := func(key, val, reason string) (Options, error) {
		return o, &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	if a.Driver != "" && a.Driver != "cephblock" {
		return bad("address", a.Scheme()+"://...", "not a cephblock address")
	}
	if a.Transport != "" || len(a.Query) > 0 || (a.Path != "" && a.Path != "/") {
		return bad("address", a.Scheme()+"://...", "a cephblock address is cephblock://monitor[:port], with no path or query (or none: the monitors from conf)")
	}
	o.CLI = fencegroup.CLI{}
	if a.Host != "" {
		mon := a.Host
		if a.Port != 0 {
			mon = a.HostPort(0)
		}
		o.CLI.Args = []string{"-m", mon}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"conf", &o.CLI.Conf}, {"cluster", &o.CLI.Cluster}, {"id", &o.CLI.ID}, {"keyring", &o.CLI.Keyring}, {"ceph_path", &o.CLI.Path}} {
		if v, ok := p.Get(f.key); ok {
			*f.dst = strings.TrimSpace(v)
		}
	}
	if strings.HasPrefix(o.CLI.ID, "client.") {
		return bad("id", o.CLI.ID, "the client's name without \"client.\"")
	}
	// Each is passed to ceph as the value of its flag: one that reads as
	// a flag of its own (id=--admin-socket=...) is refused.
	for _, f := range []struct{ key, v string }{{"conf", o.CLI.Conf}, {"cluster", o.CLI.Cluster}, {"id", o.CLI.ID}, {"keyring", o.CLI.Keyring}, {"ceph_path", o.CLI.Path}} {
		if strings.HasPrefix(f.v, "-") {
			return bad(f.key, f.v, "must not start with '-'")
		}
	}
	if o.CLI.ID != "" && strings.ContainsFunc(o.CLI.ID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) {
		return bad("id", o.CLI.ID, "want letters, digits, '.', '_' and '-' only")
	}
	if v, ok, err := p.Bool("allow_loopback"); err != nil {
		return o, err
	} else if ok {
		o.AllowLoopback = v
	}
	if d, ok, err := p.Seconds("expire"); err != nil {
		return o, err
	} else if ok {
		if d < time.Second {
			return bad("expire", p["expire"], "want at least one second")
		}
		o.Expire = d
	}
	if n, ok, err := p.Int("max_addresses"); err != nil {
		return o, err
	} else if ok {
		if n < 1 || n > 1<<16 {
			return bad("max_addresses", p["max_addresses"], "want 1 to 65536")
		}
		o.MaxAddresses = n
	}
	if t, ok, err := p.Seconds("io_timeout"); err == nil && ok && t > 0 {
		o.CLI.Timeout = t
	}
	return o, nil
}
