package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/policy"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, env(map[string]string{envPodName: "fencekit-controller-7d9f-x2", envPodNamespace: "fencekit-system"}), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "fencekit-system", o.Namespace)
	assert.Equal(t, "fencekit-system", o.LeaderElectionNamespace, "the lease lives beside the ConfigMaps by default")
	assert.Equal(t, "fencekit-controller-7d9f-x2", o.Identity)
	assert.True(t, o.LeaderElect)
	assert.Equal(t, "fencekit-controller", o.LeaderElectionName)
	assert.Equal(t, "taint", o.PodTreatment)
	assert.Equal(t, time.Minute, o.UnhealthyAfter)
	assert.Equal(t, 10*time.Second, o.Interval)
	assert.Equal(t, flow.Options{}.Defaults(), o.flow(), "the flow's defaults are the library's")
	assert.Empty(t, o.KdumpListen, "kdump is off unless asked for")
	assert.Empty(t, o.CephCluster)
	assert.Equal(t, slog.LevelInfo, o.LogLevel)
	assert.Equal(t, "json", o.LogFormat)

	// Without the downward API: the default namespace and the host name.
	o, err = parseFlags(nil, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "default", o.Namespace)
	host, _ := os.Hostname()
	assert.Equal(t, host, o.Identity)
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{
		"--namespace=fence", "--identity", "ctl-0", "--leader-elect=false",
		"--unhealthy-after=30s", "--interval=2s", "--power-delay=90s", "--poll-interval=5s",
		"--max-polls=3", "--max-retries=0", "--retry-backoff=1s", "--job-timeout=2m", "--pods-timeout=45s", "--max-workers=4",
		"--pod-treatment=delete", "--kdump-listen=:7410", "--kdump-stale=20s", "--kdump-timeout=5m",
		"--ceph-cluster=rook-ceph", "--ceph-id=fencer", "--log-level=debug", "--log-format=text",
	}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "fence", o.Namespace)
	assert.Equal(t, "ctl-0", o.Identity)
	assert.False(t, o.LeaderElect)
	assert.Equal(t, "delete", o.PodTreatment)
	assert.Equal(t, slog.LevelDebug, o.LogLevel)
	assert.Equal(t, flow.Options{PowerDelay: 90 * time.Second, PollInterval: 5 * time.Second, MaxPolls: 3,
		MaxRetries: -1, RetryBackoff: time.Second, JobTimeout: 2 * time.Minute, PodsTimeout: 45 * time.Second, MinOff: 2 * time.Second}, o.flow(),
		"--max-retries=0 is no retry, which the flow spells -1")
	assert.Equal(t, -1, o.flow().Defaults().Defaults().MaxRetries,
		"still no retry once the controller and the flow have both defaulted it (it was 3: --max-retries=0 retried three times)")
}

func TestParseFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag", []string{"--unheathy-after=1m"}, []string{"flag provided but not defined: -unheathy-after"}},
		{"positional argument", []string{"run"}, []string{`unexpected argument "run"`}},
		{"bad duration", []string{"--interval=10"}, []string{`invalid value "10" for flag -interval`}},
		{"zero duration", []string{"--interval=0s"}, []string{"--interval: 0s: want 100ms to 1h0m0s"}},
		// Values that parse but make no sense: a client that never sends,
		// checks that never start, busy loops, and a renewal interval that
		// would let a lease grace of two seconds past its check.
		{"api qps", []string{"--kube-api-qps=1e-300"}, []string{"--kube-api-qps: 1e-300: want 1 to 100000 requests a second"}},
		{"device check rate", []string{"--device-check-rate=1e-300"}, []string{"--device-check-rate: 1e-300: want 0.01 (one check every 100 s) to 1000"}},
		{"interval", []string{"--interval=1ns"}, []string{"--interval: 1ns: want 100ms to 1h0m0s"}},
		{"poll interval", []string{"--poll-interval=1ns"}, []string{"--poll-interval: 1ns: want 100ms to 1h0m0s"}},
		{"retry period", []string{"--leader-election-retry-period=1ns"}, []string{"--leader-election-retry-period: 1ns: want 100ms to 1m0s"}},
		{"lease renew interval", []string{"--lease-renew-interval=1ns", "--lease-grace=2s"}, []string{"--lease-renew-interval: 1ns: want 1s to 10m0s"}},
		{"negative delay", []string{"--power-delay=-1m"}, []string{"--power-delay: -1m0s"}},
		{"pod treatment", []string{"--pod-treatment=evict"}, []string{`--pod-treatment: "evict": want taint, taint-only or delete`}},
		{"namespace", []string{"--namespace=Fence_NS"}, []string{`--namespace: "Fence_NS" is not a valid namespace name`}},
		{"empty identity", []string{"--identity= "}, []string{"--identity: empty"}},
		{"lease name", []string{"--leader-election-name=Bad Name"}, []string{`--leader-election-name: "Bad Name"`}},
		{"lease timings", []string{"--leader-election-lease-duration=5s", "--leader-election-renew-deadline=5s"},
			[]string{"--leader-election-lease-duration: 5s must exceed --leader-election-renew-deadline (5s)"}},
		{"renew deadline", []string{"--leader-election-renew-deadline=2s", "--leader-election-retry-period=2s"},
			[]string{"--leader-election-renew-deadline: 2s must exceed 1.2 times"}},
		{"lease timings unchecked without election", []string{"--leader-elect=false", "--leader-election-lease-duration=1s"}, nil},
		{"max polls", []string{"--max-polls=0"}, []string{"--max-polls: 0: want 1 or more"}},
		{"max retries", []string{"--max-retries=-1"}, []string{"--max-retries: -1: want 0 or more"}},
		{"max workers", []string{"--max-workers=0"}, []string{"--max-workers: 0"}},
		{"kdump address", []string{"--kdump-listen=7410"}, []string{`--kdump-listen: "7410": want host:port or :port`}},
		{"kdump port", []string{"--kdump-listen=:kdump"}, []string{`--kdump-listen: ":kdump": port "kdump" is not a number`}},
		{"kdump stale", []string{"--kdump-listen=:7410", "--kdump-stale=0s"}, []string{"--kdump-stale: 0s"}},
		{"ceph cluster", []string{"--ceph-cluster=-rook"}, []string{"--ceph-cluster: invalid Ceph cluster name"}},
		{"ceph command", []string{"--ceph-cluster=rook-ceph", "--ceph-command="}, []string{"--ceph-command: empty"}},
		{"log level", []string{"--log-level=loud"}, []string{`invalid value "loud" for flag -log-level`}},
		{"log format", []string{"--log-format=xml"}, []string{`--log-format: "xml": want json or text`}},
		{"every bad flag at once", []string{"--interval=0s", "--pod-treatment=x", "--max-polls=0"},
			[]string{"--interval: ", "--pod-treatment: ", "--max-polls: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, env(nil), &bytes.Buffer{})
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	o := options{}
	require.NoError(t, o.loadPolicy())
	assert.Equal(t, policy.DefaultConfig(), o.Policy, "no file: the defaults")

	o.PolicyFile = write("p.yaml", "maxInFlight: 3\nstormGuard:\n  maxUnresponsive: 10\n")
	require.NoError(t, o.loadPolicy())
	want := policy.DefaultConfig()
	want.MaxInFlight, want.StormGuard.MaxUnresponsive = 3, 10
	assert.Equal(t, want, o.Policy, "read over the defaults")

	o.PolicyFile = write("bad.yaml", "maxInFlight: 3\nstormGuard:\n  coolDown: 1m\n")
	err := o.loadPolicy()
	require.ErrorIs(t, err, policy.ErrConfig)
	assert.Contains(t, err.Error(), "--policy-file "+o.PolicyFile+": policy config: stormGuard.coolDown: unknown field (did you mean cooldown?")

	o.PolicyFile = filepath.Join(dir, "missing.yaml")
	err = o.loadPolicy()
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "--policy-file: ")
}

// The exit statuses: 2 for a bad flag or policy file, 0 for -h, 1 when
// there is no cluster to talk to.
func TestRealMainExitStatus(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("maxInFlight: -1\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{"help", []string{"-h"}, nil, exitOK, "Usage: fencekit-controller [flags]"},
		{"bad flag", []string{"--pod-treatment=evict"}, nil, exitUsage, "fencekit-controller: --pod-treatment: \"evict\": want taint, taint-only or delete\nRun fencekit-controller -h for the flags.\n"},
		{"bad policy", []string{"--policy-file=" + bad}, nil, exitUsage, "maxInFlight: -1 is negative"},
		{"no cluster", nil, map[string]string{"KUBERNETES_SERVICE_HOST": ""}, exitFail, "no --kubeconfig, no $KUBECONFIG, and not in a cluster"},
		{"bad kubeconfig", []string{"--kubeconfig=" + bad}, nil, exitFail, "kubeconfig " + bad + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := os.LookupEnv("KUBERNETES_SERVICE_HOST"); ok && tc.code == exitFail && tc.env != nil {
				t.Skip("running in a pod: the in-cluster configuration is there")
			}
			var stderr bytes.Buffer
			code := realMain(t.Context(), tc.args, env(tc.env), &stderr)
			assert.Equal(t, tc.code, code, stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
