package errfmt

import (
	"errors"
	"testing"
)

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"labels and cause", new(Labels).Start("fence").Add("node", "n1").Add("method", "").AddRaw("driver", "ipmi").Part("status").Cause(errors.New("boom"), "failed"),
			"fence: node n1, driver ipmi: status: boom"},
		{"no labels, no cause", new(Labels).Start("fence").Cause(nil, "failed"), "fence: failed"},
		{"quoted", new(Labels).Start("x").Add("node", `a b"c`).Cause(nil, "failed"), `x: node "a b\"c": failed`},
		{"object, step and cause", new(Labels).Start("pkg: " + Object("ns", "name")).Part(Step("patch", "metadata.labels")).End(errors.New("conflict")),
			"pkg: ns/name: patch metadata.labels: conflict"},
		{"cluster-scoped object, no field, no cause", new(Labels).Start(Object("", "node-1")).Part(Step("get", "")).End(nil), "node-1: get"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if Quote("") != "" || Quote("plain-name.1") != "plain-name.1" || Quote("ü") != `"ü"` {
		t.Error("Quote")
	}
}
