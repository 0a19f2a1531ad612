package config_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// FuzzParseConfig puts a .properties body in one of the ConfigMaps of a small
// configuration and parses it: Parse must never panic, every error must
// be a *Error matching ErrConfig with no Config, and a Config that
// parses must resolve every method its nodes list.
func FuzzParseConfig(f *testing.F) {
	for _, b := range []string{
		"node_name=n1\nisolation=port-off\npower_management=pdu-off pdu-on\nrecovery=port-off",
		"    node_name=host\n    isolation=fc-off\n    power_management=eaton-off eaton-on\n    recovery=fc-on",
		"isolation=port-off\nisolation.2=pdu-off\npower_management.3=pdu-on\nkdump=yes",
		"template=fence-method-template-pdu\nplug=1\naction=off",
		"        template=fence-method-template-eaton-pdu\n        plug=1\n        action=off",
		"          name=eaton_pdu\n          agent_name=fence_eaton_snmp\n          must_sucess=yes\n          ipaddr=192.168.1.4\n          password=eaton_password\n          username=eaton_admin\n          snmp-priv-prot=AES\n          snmp-priv-passwd=eaton_snmp_passwd\n          snmp-sec-level=authPriv\n          inet4-only=true",
		"address=ipmi://10.0.0.1:623\npower_timeout=5\nretry_on=2\nmust_succeed=no",
		"template=switch\nip=10.0.0.1\nipaddr=10.0.0.2\npassword=\\u12",
		"driver=\ntemplate=\n=x\nrecover=a b\\\n  c",
	} {
		for which := range uint8(4) {
			f.Add(b, which)
		}
	}
	f.Fuzz(func(t *testing.T, body string, which uint8) {
		cms := cfgBase()
		switch which % 4 {
		case 0:
			cms = replace(cms, cfgNode("n1", body))
		case 1:
			cms = replace(cms, cfgMethod("pdu-off", "n1", body))
		case 2:
			cms = replace(cms, cfgTemplate("pdu", body))
		case 3:
			cms = replace(cms, cfgMethod("extra", "n1", body), cfgNode("n1", "isolation=extra\npower_management=pdu-off pdu-on"))
		}
		cfg, err := config.Parse(cms)
		if err != nil {
			if cfg != nil {
				t.Fatal("a Config with an error")
			}
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				var ce *config.Error
				if !errors.As(e, &ce) || !errors.Is(e, fence.ErrConfig) {
					t.Fatalf("%T is not a *Error: %v", e, e)
				}
				if ce.ConfigMap == "" {
					t.Fatalf("error names no ConfigMap: %v", e)
				}
				if !strings.Contains(body, "s3cret") && strings.Contains(e.Error(), "s3cret-pw") {
					t.Fatalf("error quotes a password: %v", e)
				}
			}
			return
		}
		reg := fence.NewRegistry()
		_ = reg.Register(fence.Driver{Name: "stub", Open: func(context.Context, fence.OpenOptions) (fence.Device, error) {
			return &cfgDevice{}, nil
		}})
		_ = cfg.Validate(reg)
		for _, node := range cfg.Nodes() {
			n, ok := cfg.Node(node)
			if !ok {
				t.Fatalf("node %q listed but not found", node)
			}
			for _, s := range fence.Steps() {
				for _, l := range n.Methods(s) {
					for _, m := range l {
						if _, _, err := cfg.MethodParams(node, m); err != nil {
							t.Fatalf("listed method %q: %v", m, err)
						}
					}
				}
				_, _ = cfg.Levels(context.Background(), reg, node, s, nil)
			}
		}
	})
}
