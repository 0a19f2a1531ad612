package main

import (
	"io"
	"strings"
	"testing"
)

// Any command line either parses into options that validate, or fails
// with an error; it never panics.
func FuzzParseFlags(f *testing.F) {
	for _, seed := range []string{
		"",
		"--namespace=fencekit-system --identity=ctl-0",
		"--leader-elect=false --unhealthy-after=30s --interval=2s",
		"--pod-treatment=delete --max-retries=0 --max-polls=1",
		"--kdump-listen=:7410 --kdump-stale=20s --kdump-timeout=5m",
		"--kdump-listen=[::1]:7410",
		"--ceph-cluster=rook-ceph --ceph-id=fencer --ceph-interval=30s",
		"--leader-election-lease-duration=4s --leader-election-renew-deadline=3s --leader-election-retry-period=1s",
		"--log-level=debug --log-format=text",
		"--interval=-1s --namespace=UPPER --log-format=xml",
		"-h",
		"--policy-file=/etc/fencekit/policy.yaml extra",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		o, err := parseFlags(strings.Fields(line), env(nil), io.Discard)
		if err != nil {
			return
		}
		if err := o.validate(); err != nil {
			t.Fatalf("parsed options do not validate: %v", err)
		}
		if o.LeaderElectionNamespace == "" {
			t.Fatal("no lease namespace")
		}
		fl := o.flow()
		if fl.MaxRetries == 0 || fl.PowerDelay <= 0 || fl.JobTimeout <= 0 {
			t.Fatalf("flow options %+v", fl)
		}
	})
}
