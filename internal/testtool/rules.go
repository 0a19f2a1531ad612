package testtool

import (
	"os"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"
)

// RuleMetrics reads the alert group group of the Prometheus rule file at
// path and returns, for each of its alerts, the fencekit metrics its
// expression names; an alert that names none, or a group with no alert,
// fails t. A test checks them against the metrics its program exports.
func RuleMetrics(t testing.TB, path, group string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("testtool: %v", err)
	}
	var rf struct {
		Groups []struct {
			Name  string
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("testtool: %s: %v", path, err)
	}
	names := regexp.MustCompile(`\bfencekit_[a-z_]+`)
	out := map[string][]string{}
	for _, g := range rf.Groups {
		if g.Name != group {
			continue
		}
		for _, r := range g.Rules {
			used := names.FindAllString(r.Expr, -1)
			if len(used) == 0 {
				t.Fatalf("testtool: %s: alert %s names no fencekit metric", path, r.Alert)
			}
			out[r.Alert] = used
		}
	}
	if len(out) == 0 {
		t.Fatalf("testtool: %s: no alert in group %s", path, group)
	}
	return out
}
