package teardown_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/teardown"
)

// fields returns the fields named by a validation error, in order.
func fields(t *testing.T, err error) []string {
	t.Helper()
	st := teardown.StatusOf(err)
	var out []string
	for _, m := range st.Details.MessageList {
		assert.Equal(t, teardown.KindValidation, m.Kind)
		assert.True(t, m.Error)
		out = append(out, m.Name)
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		req    teardown.Request
		fields []string // nil: valid
	}{
		{"defaults", teardown.Request{Node: "node-3"}, nil},
		{"fqdn", teardown.Request{Node: "node-3.rack1.example.com"}, nil},
		{"no node", teardown.Request{}, []string{"node"}},
		{"upper case node", teardown.Request{Node: "Node-3"}, []string{"node"}},
		{"node with a slash", teardown.Request{Node: "a/b"}, []string{"node"}},
		{"node too long", teardown.Request{Node: strings.Repeat("a", 254)}, []string{"node"}},
		{"negative", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{ClearLabels: -time.Second}}, []string{"clear-labels-timeout"}},
		{"fraction", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{EtcdReady: 1500 * time.Millisecond}}, []string{"etcd-ready-timeout"}},
		{"too long", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{RemoveEtcd: teardown.MaxTimeout + time.Second}}, []string{"remove-etcd-timeout"}},
		{"max", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{RemoveEtcd: teardown.MaxTimeout}}, nil},
		{"grace above timeout", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{Drain: 600 * time.Second, DrainGracePeriod: 900 * time.Second}}, []string{"drain-node-grace-period"}},
		{"grace equal to timeout", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{Drain: 600 * time.Second, DrainGracePeriod: 600 * time.Second}}, []string{"drain-node-grace-period"}},
		{"grace above the default timeout", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{DrainGracePeriod: 3600 * time.Second}}, []string{"drain-node-grace-period"}},
		{"short drain alone", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{Drain: 600 * time.Second}}, nil},
		{"one second drain", teardown.Request{Node: "n", Timeouts: teardown.Timeouts{Drain: time.Second}}, nil},
		{"bad target", teardown.Request{Node: "n", Target: 9}, []string{"target-revision"}},
		{"negative revision", teardown.Request{Node: "n", Revision: -1}, []string{"target-revision"}},
		{"addresses", teardown.Request{Node: "n", Addresses: []string{"10.0.0.3", "fd00::3", "Node-3.Example.com"}}, nil},
		{"bad address", teardown.Request{Node: "n", Addresses: []string{"10.0.0.3", "10.0.0.3:2380"}}, []string{"addresses[1]"}},
		{"labels", teardown.Request{Node: "n", Labels: []string{"calico-etcd", "node-role.kubernetes.io/control-plane", "a_b.C"}}, nil},
		{"bad labels", teardown.Request{Node: "n", Labels: []string{"", "-x", "Bad_Prefix/x", "a/"}}, []string{"labels[0]", "labels[1]", "labels[2]", "labels[3]"}},
		{"several", teardown.Request{Node: "", Timeouts: teardown.Timeouts{Drain: -1, PowerOff: time.Millisecond}}, []string{"node", "drain-node-timeout", "power-off-timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if tt.fields == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.fields, fields(t, err))
			st := teardown.StatusOf(err)
			assert.Equal(t, 400, st.Code)
			assert.Equal(t, teardown.ReasonBadRequest, st.Reason)
			assert.Equal(t, teardown.ReasonBadRequest, teardown.ReasonOf(err))
		})
	}
}

func TestTimeoutsWithDefaults(t *testing.T) {
	assert.Equal(t, teardown.DefaultTimeouts(), teardown.Timeouts{}.WithDefaults())
	d := teardown.DefaultTimeouts()
	assert.Equal(t, 3600*time.Second, d.Drain)
	assert.Equal(t, 1800*time.Second, d.DrainGracePeriod)
	assert.Equal(t, 1800*time.Second, d.ClearLabels)
	assert.Equal(t, 1800*time.Second, d.RemoveEtcd)
	assert.Equal(t, 600*time.Second, d.EtcdReady)

	got := teardown.Timeouts{Drain: 601 * time.Second}.WithDefaults()
	assert.Equal(t, 300*time.Second, got.DrainGracePeriod, "half, in whole seconds")
	got = teardown.Timeouts{Drain: 2400 * time.Second}.WithDefaults()
	assert.Equal(t, 1800*time.Second, got.DrainGracePeriod, "the default is below the timeout")
	got = teardown.Timeouts{Drain: 600 * time.Second, DrainGracePeriod: 900 * time.Second}.WithDefaults()
	assert.Equal(t, 900*time.Second, got.DrainGracePeriod, "a given grace period is kept, for Validate to refuse")
}

func TestParseRequest(t *testing.T) {
	full := "drain-node-timeout=1200&drain-node-grace-period=600&clear-labels-timeout=300&remove-etcd-timeout=400" +
		"&etcd-ready-timeout=500&shutdown-kubelet-timeout=100&destroy-node-timeout=7200&power-off-timeout=60" +
		"&release-node-timeout=40&remove-from-cluster-timeout=30&preserve-local-storage=true&allow-intermediate-commits=TRUE&target-revision=last-site-action"
	q, err := url.ParseQuery(full)
	require.NoError(t, err)
	r, err := teardown.ParseRequest("node-3", q)
	require.NoError(t, err)
	assert.Equal(t, teardown.Request{
		Node: "node-3", PreserveLocalStorage: true, AllowIntermediateCommits: true, Target: teardown.TargetLastSiteAction,
		Timeouts: teardown.Timeouts{Drain: 1200 * time.Second, DrainGracePeriod: 600 * time.Second, ClearLabels: 300 * time.Second,
			RemoveEtcd: 400 * time.Second, EtcdReady: 500 * time.Second, ShutdownKubelet: 100 * time.Second,
			DestroyNode: 7200 * time.Second, PowerOff: 60 * time.Second, ReleaseNode: 40 * time.Second, RemoveFromCluster: 30 * time.Second},
	}, r)

	tests := []struct {
		query  string
		want   teardown.Request // when fields is nil
		fields []string
	}{
		{"", teardown.Request{Node: "node-3"}, nil},
		{"drain-node-timeout=0", teardown.Request{Node: "node-3"}, nil},
		{"target-revision=committed", teardown.Request{Node: "node-3", Target: teardown.TargetCommitted}, nil},
		{"target-revision=Successful-Site-Action", teardown.Request{Node: "node-3"}, nil},
		{"target-revision=17", teardown.Request{Node: "node-3", Revision: 17}, nil},
		{"preserve-local-storage=false", teardown.Request{Node: "node-3"}, nil},
		{"target-revision=0", teardown.Request{}, []string{"target-revision"}},
		{"target-revision=-1", teardown.Request{}, []string{"target-revision"}},
		{"target-revision=buffer", teardown.Request{}, []string{"target-revision"}},
		{"target-revision=99999999999", teardown.Request{}, []string{"target-revision"}},
		{"drain-node-timeout=5s", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=+5", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=%205", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=-1", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=1.5", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=604801", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=99999999999999999999999", teardown.Request{}, []string{"drain-node-timeout"}},
		{"drain-node-timeout=600&drain-node-grace-period=600", teardown.Request{}, []string{"drain-node-grace-period"}},
		{"drain-node-timeout=1&drain-node-timeout=2", teardown.Request{}, []string{"drain-node-timeout"}},
		{"preserve-local-storage=yes", teardown.Request{}, []string{"preserve-local-storage"}},
		{"preserve-local-storage", teardown.Request{}, []string{"preserve-local-storage"}},
		{"allow-intermediate-commits=1", teardown.Request{}, []string{"allow-intermediate-commits"}},
		{"drain-node-timout=600", teardown.Request{}, []string{"drain-node-timout"}},
		{"timeout=600&grace-period=1", teardown.Request{}, []string{"grace-period", "timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			r, err := teardown.ParseRequest("node-3", q)
			if tt.fields == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.want, r)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.fields, fields(t, err))
			assert.Equal(t, 400, teardown.StatusOf(err).Code)
		})
	}

	_, err = teardown.ParseRequest("Node_3", nil)
	assert.Equal(t, []string{"node"}, fields(t, err))
}

func TestParseRequestQuotesNoLongInput(t *testing.T) {
	long := strings.Repeat("x", 10000)
	_, err := teardown.ParseRequest("node-3", url.Values{"target-revision": {long}, long: {"1"}})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 600)
}

// FuzzParseRequest: any query string either parses into a request that
// validates, with whole-second timeouts within range, or fails with a 400
// whose every message names a field.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"",
		"drain-node-timeout=3600&drain-node-grace-period=1800",
		"drain-node-timeout=600",
		"clear-labels-timeout=1800&remove-etcd-timeout=1800&etcd-ready-timeout=600",
		"preserve-local-storage=true&allow-intermediate-commits=false&target-revision=committed",
		"target-revision=42",
		"target-revision=last-site-action&power-off-timeout=0",
		"drain-node-timeout=1&drain-node-grace-period=0",
		"drain-node-timeout=-5&x=1&x=2",
		"drain-node-timeout=%2B5",
		"preserve-local-storage",
		"target-revision=99999999999999999999",
		"destroy-node-timeout=604800",
	} {
		f.Add("node-3", s)
	}
	f.Add("", "")
	f.Add("NODE", "a=%zz")
	f.Add("zzdc\r8", "=")
	f.Add("0", "=&=")
	f.Fuzz(func(t *testing.T, node, query string) {
		q, _ := url.ParseQuery(query) // what parsed, even after a bad escape
		r, err := teardown.ParseRequest(node, q)
		if err != nil {
			st := teardown.StatusOf(err)
			if st.Code != 400 || st.Reason != teardown.ReasonBadRequest {
				t.Fatalf("status %d %s for %v", st.Code, st.Reason, err)
			}
			for _, m := range st.Details.MessageList {
				if m.Name == "" || !m.Error {
					t.Fatalf("message without a field: %+v", m)
				}
			}
			var te *teardown.Error
			if !errors.As(err, &te) || te.Node != node {
				t.Fatalf("error does not name the node: %v", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("parsed but does not validate: %v", err)
		}
		if r.Node != node {
			t.Fatalf("node %q, want %q", r.Node, node)
		}
		d := r.Timeouts.WithDefaults()
		if d.DrainGracePeriod >= d.Drain {
			t.Fatalf("grace %v not below %v", d.DrainGracePeriod, d.Drain)
		}
		for _, v := range []time.Duration{d.Drain, d.ClearLabels, d.RemoveEtcd, d.EtcdReady, d.ShutdownKubelet, d.DestroyNode, d.PowerOff, d.RemoveFromCluster} {
			if v <= 0 || v > teardown.MaxTimeout || v%time.Second != 0 {
				t.Fatalf("timeout %v out of range", v)
			}
		}
		if r.Revision < 0 {
			t.Fatalf("revision %d", r.Revision)
		}
	})
}

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want teardown.Target
	}{
		{"", teardown.TargetSuccessfulSiteAction},
		{"successful-site-action", teardown.TargetSuccessfulSiteAction},
		{"committed", teardown.TargetCommitted},
		{"LAST-SITE-ACTION", teardown.TargetLastSiteAction},
	} {
		got, err := teardown.ParseTarget(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		if tt.in != "" {
			assert.Equal(t, strings.ToLower(tt.in), got.String())
		}
	}
	_, err := teardown.ParseTarget("buffer")
	require.Error(t, err)
	assert.Equal(t, "target(7)", teardown.Target(7).String())
}

// Query is ParseRequest's inverse.
func TestRequestQueryRoundTrip(t *testing.T) {
	for _, r := range []teardown.Request{
		{Node: "node-3"},
		{Node: "node-3", PreserveLocalStorage: true, AllowIntermediateCommits: true, Revision: 12,
			Timeouts: teardown.Timeouts{Drain: 120 * time.Second, DrainGracePeriod: 30 * time.Second, ReleaseNode: 5 * time.Second}},
		{Node: "node-3", Target: teardown.TargetCommitted, Timeouts: teardown.Timeouts{PowerOff: time.Second}},
	} {
		got, err := teardown.ParseRequest(r.Node, r.Query())
		require.NoError(t, err, r.Query().Encode())
		assert.Equal(t, r, got, r.Query().Encode())
	}
}
