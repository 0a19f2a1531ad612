package properties

import (
	"errors"
	"strings"
	"testing"
)

// seedBodies are the .properties bodies of the node fencing design's
// ConfigMaps, as written there (indented) and as YAML hands them over.
var seedBodies = []string{
	"node_name=host1\nisolation=fc-off\npower_management=eaton-off eaton-on\nrecovery=fc-on",
	"    node_name=host1\n    isolation=fc-off\n    power_management=eaton-off eaton-on\n    recovery=fc-on",
	"    node_name=lago-kube-host0\n    isolation=fc-off\n    power_management=eaton-off eaton-on\n    recovery=fc-on",
	"    node_name=host\n    isolation=fc-off\n    power_management=eaton-off eaton-on\n    recovery=fc-on",
	"          template=fence-method-template-fc-switch-brocade\n          plug=2",
	"        template=fence-method-template-eaton-pdu\n        plug=1\n        action=off",
	"        template=fence-method-template-eaton-pdu\n        plug=2\n        action=on",
	"          name=fc_switch_brocade\n          agent_name=fence_brocade\n          ipaddr=192.168.1.2\n          password=brocade_password\n          username=brocade_admin",
	"          name=apc_pdu\n          agent_name=fence_apc_snmp\n          must_sucess=yes\n          ipaddr=192.168.1.3\n          password=apc_password\n          username=apc_admin",
	"          name=eaton_pdu\n          agent_name=fence_eaton_snmp\n          must_sucess=yes\n          ipaddr=192.168.1.4\n          password=eaton_password\n          username=eaton_admin\n          snmp-priv-prot=AES\n          snmp-priv-passwd=eaton_snmp_passwd\n          snmp-sec-level=authPriv\n          inet4-only=true",
}

func FuzzParse(f *testing.F) {
	for _, b := range seedBodies {
		f.Add(b)
		f.Add(strings.ReplaceAll(b, "\n", "\r\n"))
	}
	for _, b := range []string{
		"a b\\\n  c\r\n# x\n! y\nk\\ey: \\u00e9\\uD83D\\uDE00\\t",
		"a=\\\n\\\n\\\n",
		"\uFEFF\\#=\\ \\=",
		"x=\\u12\n",
		"a=1\na=2",
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		entries, err := Parse(body)
		if err != nil {
			if entries != nil {
				t.Fatalf("entries returned with an error")
			}
			var joined interface{ Unwrap() []error }
			if !errors.As(err, &joined) {
				t.Fatalf("error is not joined: %T", err)
			}
			for _, x := range joined.Unwrap() {
				pe, ok := x.(*Error)
				if !ok {
					t.Fatalf("error %T is not *Error", x)
				}
				if pe.Line < 1 {
					t.Fatalf("error without a line: %v", pe)
				}
			}
			return
		}
		prev := 0
		for _, en := range entries {
			if en.Line <= prev {
				t.Fatalf("lines not increasing: %d after %d", en.Line, prev)
			}
			prev = en.Line
		}
		var b strings.Builder
		if err := Format(&b, entries); err != nil {
			t.Fatalf("Format: %v", err)
		}
		again, err := Parse(b.String())
		if err != nil {
			t.Fatalf("Parse(Format(...)): %v\nformatted:\n%s", err, b.String())
		}
		if len(again) != len(entries) {
			t.Fatalf("round trip: %d entries, want %d", len(again), len(entries))
		}
		for i := range entries {
			if again[i].Key != entries[i].Key || again[i].Value != entries[i].Value {
				t.Fatalf("round trip entry %d: got %q=%q, want %q=%q", i, again[i].Key, again[i].Value, entries[i].Key, entries[i].Value)
			}
			if again[i].Line != i+1 {
				t.Fatalf("formatted entry %d on line %d", i, again[i].Line)
			}
		}
		var b2 strings.Builder
		if err := Format(&b2, again); err != nil {
			t.Fatalf("Format again: %v", err)
		}
		if b2.String() != b.String() {
			t.Fatalf("Format is not stable")
		}
	})
}
