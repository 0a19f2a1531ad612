package teardownhttp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardownhttp"
	"github.com/fencekit/fencekit/teardown/teardowntest"
)

// Unit tests of the handler over the in-memory ports (teardowntest) and a
// fake fence device, served over TLS by httptest. The end-to-end test on
// the real API server and etcd is kube/teardownkube's TestE2ETeardownHTTP.

const token = "s3cret-token-for-the-teardown-api"

var ref = teardownhttp.NewDesignRef("deckhand+https://deckhand.example/api/v1.0", 1)

type site struct {
	cluster *teardowntest.Cluster
	etcd    *teardowntest.Etcd
	prov    *teardowntest.Provisioner
	bmc     *fake.Device
	x       *teardown.Executor
	srv     *httptest.Server
	client  *teardownhttp.Client
	logs    *bytes.Buffer
	logMu   sync.Mutex
}

func newSite(t *testing.T, auth apiauth.Verifier) *site {
	t.Helper()
	clock := fencetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &site{cluster: teardowntest.NewCluster(), prov: &teardowntest.Provisioner{},
		bmc: fake.New(fake.Options{Plugs: []string{""}}), logs: &bytes.Buffer{}}
	s.cluster.Now = clock.Now
	s.cluster.AddNode(teardown.Node{Name: "node-3", Addresses: []string{"10.0.0.3"},
		Labels: map[string]string{"kubernetes.io/hostname": "node-3", "kubernetes-apiserver": "enabled"}},
		teardown.Pod{Namespace: "shop", Name: "web-1"})
	s.cluster.AddNode(teardown.Node{Name: "node-1"})
	s.etcd = teardowntest.NewEtcd(
		teardown.Member{ID: 1, Name: "node-1", PeerURLs: []string{"https://10.0.0.1:2380"}},
		teardown.Member{ID: 2, Name: "node-2", PeerURLs: []string{"https://10.0.0.2:2380"}},
		teardown.Member{ID: 3, Name: "node-3", PeerURLs: []string{"https://10.0.0.3:2380"}},
	)
	s.x = &teardown.Executor{
		Cluster:     s.cluster,
		Etcd:        map[string]teardown.Etcd{"kubernetes": s.etcd},
		Provisioner: s.prov,
		Power: func(_ context.Context, node string) ([]fence.Level, error) {
			return []fence.Level{{Methods: []*fence.Method{{Name: "ipmi", Node: node, Driver: "fake", Device: s.bmc,
				Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: time.Second}}}}}, nil
		},
		Revisions: teardown.NewMemoryRevisions(
			teardown.Revision{ID: 1, Committed: true, Tags: []teardown.Tag{teardown.SiteActionTag(true, "deploy_site-1")}},
			teardown.Revision{ID: 2, Committed: false},
		),
		Now: clock.Now, Sleep: clock.Sleep,
	}
	h := teardownhttp.NewHandler(s.x, teardownhttp.HandlerOptions{Auth: auth,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{s}, nil))})
	s.srv = httptest.NewTLSServer(h)
	t.Cleanup(s.srv.Close)
	s.client = &teardownhttp.Client{BaseURL: s.srv.URL, HTTPClient: s.signing(apiauth.Bearer(token))}
	return s
}

// signing returns a client of the server that signs its requests (the
// server's own client stays unsigned).
func (s *site) signing(signer apiauth.Signer) *http.Client {
	hc := *s.srv.Client()
	hc.Transport = &apiauth.Transport{Signer: signer, Base: hc.Transport}
	return &hc
}

type lockedWriter struct{ s *site }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.logMu.Lock()
	defer w.s.logMu.Unlock()
	return w.s.logs.Write(p)
}

func tokens(t *testing.T) apiauth.Verifier {
	v, err := apiauth.NewTokens(token)
	require.NoError(t, err)
	return v
}

// raw sends a request as it is, with the bearer token, and decodes the
// status response.
func (s *site) raw(t *testing.T, method, path, body string, hdr map[string]string) (int, teardown.Status) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client.HTTPClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var st teardown.Status
	require.NoError(t, json.Unmarshal(b, &st), string(b))
	assert.Equal(t, resp.StatusCode, st.Code)
	return resp.StatusCode, st
}

func refBody(t *testing.T, r teardownhttp.DesignRef) string {
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return string(b)
}

// The design's sequence of calls a deployment tool makes: the
// decommission, the destroy, the removal from the cluster; then the node is
// gone (404).
func TestDeploymentToolSequence(t *testing.T) {
	s := newSite(t, tokens(t))
	ctx := t.Context()

	st, err := s.client.EtcdHealth(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, teardown.ReasonSuccess, st.Reason)
	assert.Len(t, st.Details.MessageList, 3)
	for _, m := range st.Details.MessageList {
		assert.Equal(t, teardown.KindHealth, m.Kind)
		assert.Equal(t, "Healthy", m.Message)
	}

	st, err = s.client.Decommission(ctx, "node-3", ref, teardown.Timeouts{Drain: 60 * time.Second, EtcdReady: 60 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 200, st.Code)
	assert.Equal(t, "decommission of node node-3: 5 done", st.Message)
	n, _ := s.cluster.Get("node-3")
	assert.True(t, n.Unschedulable)
	assert.Equal(t, []uint64{3}, s.etcd.Removed())

	st, err = s.client.Destroy(ctx, "node-3", ref, true, teardown.Timeouts{PowerOff: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "destroy of node node-3: 3 done", st.Message)
	opts, ok := s.prov.DestroyedWith("node-3")
	require.True(t, ok)
	assert.Equal(t, teardown.DestroyOptions{Wipe: teardown.WipeOSDisk, Revision: 1}, opts)
	assert.True(t, s.prov.Released("node-3"))
	assert.Equal(t, fence.StateOff, s.bmc.Truth(""))

	st, err = s.client.RemoveFromCluster(ctx, "node-3", 0)
	require.NoError(t, err)
	assert.Equal(t, "remove-from-cluster: Node node-3 deleted", st.Message)

	st, err = s.client.RemoveFromCluster(ctx, "node-3", 0)
	var se *teardownhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 404, st.Code)
	assert.Equal(t, teardown.ReasonNotFound, se.Status.Reason)
	assert.Contains(t, s.logs.String(), "teardown API: remove-from-cluster")
	assert.NotContains(t, s.logs.String(), token)
}

// Each per-step endpoint runs its own step alone.
func TestPerStepEndpoints(t *testing.T) {
	s := newSite(t, tokens(t))
	ctx := t.Context()
	st, err := s.client.RemoveFromCluster(ctx, "node-3", 0)
	require.Error(t, err)
	assert.Equal(t, 409, st.Code, "not drained yet: the design's 409")
	assert.Equal(t, teardown.ReasonConflict, st.Reason)

	st, err = s.client.Drain(ctx, "node-3", 60*time.Second, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "drain: cordoned; 1 pod evicted or deleted", st.Message)
	st, err = s.client.ClearLabels(ctx, "node-3", 0)
	require.NoError(t, err)
	assert.Contains(t, st.Message, "removed the labels kubernetes-apiserver")
	st, err = s.client.RemoveEtcd(ctx, "node-3", ref, 0)
	require.NoError(t, err)
	assert.Contains(t, st.Message, "removed kubernetes/node-3")
	st, err = s.client.ShutdownKubelet(ctx, "node-3", 0)
	require.NoError(t, err)
	assert.Equal(t, 200, st.Code)
	n, _ := s.cluster.Get("node-3")
	assert.Equal(t, teardown.DecommissionValue, n.Labels[teardown.DecommissionLabel])
	assert.Equal(t, fence.StateOn, s.bmc.Truth(""), "no step of Promenade's powers off")
	_, released := s.prov.DestroyedWith("node-3")
	assert.False(t, released)
}

// A whole teardown in one call (Shipyard's redeploy_server), with the
// revision chosen by target-revision.
func TestRedeploy(t *testing.T) {
	s := newSite(t, tokens(t))
	st, err := s.client.Redeploy(t.Context(), teardown.Request{Node: "node-3", Timeouts: teardown.Timeouts{Drain: 60 * time.Second}})
	require.NoError(t, err)
	assert.Equal(t, "node node-3 torn down: 9 done", st.Message)
	_, exists := s.cluster.Get("node-3")
	assert.False(t, exists)
}

// Bad input: 400 naming the parameter as the endpoint spells it,
// MissingDesignRef, 404, 405, 412; nothing done.
func TestBadRequests(t *testing.T) {
	s := newSite(t, tokens(t))
	good := refBody(t, ref)
	json := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		reason                   teardown.Reason
		field                    string // a message names it
	}{
		{"grace period above timeout", "POST", "/nodes/node-3/drain?timeout=10&grace-period=20", "", 400, teardown.ReasonBadRequest, "grace-period"},
		{"unknown parameter", "POST", "/nodes/node-3/drain?timeuot=10", "", 400, teardown.ReasonBadRequest, "timeuot"},
		{"parameter of another endpoint", "POST", "/nodes/node-3/drain?drain-node-timeout=10", "", 400, teardown.ReasonBadRequest, "drain-node-timeout"},
		{"not a number", "POST", "/nodes/node-3/clear-labels?timeout=10s", "", 400, teardown.ReasonBadRequest, "timeout"},
		{"twice", "POST", "/nodes/node-3/clear-labels?timeout=1&timeout=2", "", 400, teardown.ReasonBadRequest, "timeout"},
		{"body where none", "POST", "/nodes/node-3/drain", good, 400, teardown.ReasonBadRequest, "body"},
		{"bad node name", "POST", "/nodes/Node_3/drain", "", 400, teardown.ReasonBadRequest, "node"},
		{"no design ref", "POST", "/nodes/node-3/decommission", "", 400, teardown.ReasonMissingDesignRef, "body"},
		{"empty design ref", "POST", "/nodes/node-3/remove-etcd", "{}", 400, teardown.ReasonMissingDesignRef, "href"},
		{"ref without revision", "POST", "/nodes/node-3/destroy", `{"rel":"design","href":"https://deckhand/api/v1.0/rendered-documents"}`, 400, teardown.ReasonBadRequest, "href"},
		{"ref of another rel", "POST", "/nodes/node-3/destroy", `{"rel":"self","href":"https://deckhand/revisions/1/rendered-documents"}`, 400, teardown.ReasonBadRequest, "rel"},
		{"ref with unknown member", "POST", "/nodes/node-3/destroy", `{"rel":"design","href":"https://d/revisions/1/x","wipe":"all"}`, 400, teardown.ReasonBadRequest, "body"},
		{"ref not JSON", "POST", "/nodes/node-3/decommission", "rel: design", 400, teardown.ReasonBadRequest, "body"},
		{"unknown node", "POST", "/nodes/node-9/drain", "", 404, teardown.ReasonNotFound, "node"},
		{"unknown node, decommission", "POST", "/nodes/node-9/decommission", good, 404, teardown.ReasonNotFound, "node-9"},
		{"revision that does not exist", "POST", "/nodes/node-3/destroy", refBody(t, teardownhttp.NewDesignRef("https://d", 7)), 412, teardown.ReasonPreconditionFailed, "href"},
		{"revision not committed", "POST", "/nodes/node-3/decommission", refBody(t, teardownhttp.NewDesignRef("https://d", 2)), 412, teardown.ReasonPreconditionFailed, "href"},
		{"health without design_ref", "GET", "/etcd-cluster-health-statuses", "", 400, teardown.ReasonMissingDesignRef, "design_ref"},
		{"health with a bad design_ref", "GET", "/etcd-cluster-health-statuses?design_ref=revision-1", "", 400, teardown.ReasonBadRequest, "design_ref"},
		{"health with another parameter", "GET", "/etcd-cluster-health-statuses?design_ref=https://d/revisions/1/x&all=1", "", 400, teardown.ReasonBadRequest, "all"},
		{"GET of a POST endpoint", "GET", "/nodes/node-3/drain", "", 405, teardownhttp.ReasonMethodNotAllowed, "POST"},
		{"no such endpoint", "POST", "/nodes/node-3/wipe", "", 404, teardown.ReasonNotFound, "/nodes/node-3/wipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, st := s.raw(t, tc.method, tc.path, tc.body, json)
			assert.Equal(t, tc.code, code, st.Message)
			assert.Equal(t, tc.reason, st.Reason)
			all := st.Message
			for _, m := range st.Details.MessageList {
				all += "\n" + m.Name + ": " + m.Message
			}
			assert.Contains(t, all, tc.field)
		})
	}
	n, _ := s.cluster.Get("node-3")
	assert.False(t, n.Unschedulable, "nothing was done")
	assert.Empty(t, s.etcd.Removed())
	assert.Zero(t, s.prov.Calls())
}

// Two requests for one node: the second is 409 Conflict while the first
// runs, and nothing of it is done; another node is not held up.
func TestConcurrentRequestsForOneNode(t *testing.T) {
	s := newSite(t, tokens(t))
	entered, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.cluster.Hook = func(op, node string) error {
		if op == teardowntest.OpDrain && node == "node-3" {
			once.Do(func() { close(entered) })
			<-unblock
		}
		return nil
	}
	first := make(chan error, 1)
	go func() {
		_, err := s.client.Drain(context.Background(), "node-3", 60*time.Second, 0)
		first <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first drain did not start")
	}
	st, err := s.client.Decommission(t.Context(), "node-3", ref, teardown.Timeouts{})
	require.Error(t, err)
	assert.Equal(t, 409, st.Code)
	assert.Equal(t, teardown.ReasonConflict, st.Reason)
	assert.Contains(t, st.Message, "a drain request for the node is running since")
	st, err = s.client.ClearLabels(t.Context(), "node-1", 0)
	require.NoError(t, err, "another node is not held up")
	assert.Equal(t, 200, st.Code)
	close(unblock)
	require.NoError(t, <-first)
	st, err = s.client.ClearLabels(t.Context(), "node-3", 0)
	require.NoError(t, err, "the node is free again")
	assert.Equal(t, 200, st.Code)
}

// Anonymous, wrongly authenticated and replayed requests are refused with
// 401 and nothing is done; no token in the logs.
func TestAuthentication(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	h := &apiauth.HMAC{Key: key}
	t.Run("no verifier configured", func(t *testing.T) {
		s := newSite(t, nil)
		_, err := s.client.Drain(t.Context(), "node-3", 0, 0)
		var se *teardownhttp.StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 401, se.Status.Code)
		assert.Equal(t, teardown.ReasonUnauthorized, se.Status.Reason)
		n, _ := s.cluster.Get("node-3")
		assert.False(t, n.Unschedulable)
	})
	t.Run("tokens", func(t *testing.T) {
		s := newSite(t, tokens(t))
		for _, auth := range []string{"", "Bearer wrong", "Basic " + token, "Bearer " + token + "x"} {
			req, err := http.NewRequestWithContext(t.Context(), "POST", s.srv.URL+"/nodes/node-3/drain", nil)
			require.NoError(t, err)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := s.srv.Client().Do(req) // without the client's signer
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, 401, resp.StatusCode, auth)
			assert.Contains(t, string(b), `"reason":"Unauthorized"`)
			assert.NotContains(t, string(b), token)
		}
		n, _ := s.cluster.Get("node-3")
		assert.False(t, n.Unschedulable, "nothing done")
		assert.NotContains(t, s.logs.String(), token)
		assert.Contains(t, s.logs.String(), "request refused")
	})
	t.Run("signed, then replayed", func(t *testing.T) {
		s := newSite(t, h)
		req, err := http.NewRequestWithContext(t.Context(), "POST", s.srv.URL+"/nodes/node-3/clear-labels?timeout=60", nil)
		require.NoError(t, err)
		require.NoError(t, h.Sign(req))
		captured := req.Header.Clone()
		resp, err := s.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)

		replay, err := http.NewRequestWithContext(t.Context(), "POST", s.srv.URL+"/nodes/node-3/clear-labels?timeout=60", nil)
		require.NoError(t, err)
		replay.Header = captured
		resp, err = s.srv.Client().Do(replay)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 401, resp.StatusCode, "a replayed request is refused")

		tampered, err := http.NewRequestWithContext(t.Context(), "POST", s.srv.URL+"/nodes/node-3/drain?timeout=60", nil)
		require.NoError(t, err)
		tampered.Header = captured
		resp, err = s.srv.Client().Do(tampered)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 401, resp.StatusCode, "a signature of another target is refused")
		n, _ := s.cluster.Get("node-3")
		assert.False(t, n.Unschedulable, "the tampered drain did nothing")

		c := &teardownhttp.Client{BaseURL: s.srv.URL, HTTPClient: s.signing(h)}
		st, err := c.Destroy(t.Context(), "node-3", ref, false, teardown.Timeouts{})
		require.NoError(t, err, "a signed body")
		assert.Equal(t, 200, st.Code)
	})
}

func TestParseDesignRef(t *testing.T) {
	for href, want := range map[string]int{
		"deckhand+https://deckhand.example/api/v1.0/revisions/7/rendered-documents": 7,
		"https://d/revisions/12":            12,
		"https://d/revisions/0/x":           0,
		"https://d/revisions/-1/":           0,
		"https://d/revisions//x":            0,
		"https://d/revision/3/x":            0,
		"/revisions/3/x":                    0,
		"https://d/revisions/99999999999/x": 0,
		"":                                  0,
	} {
		got, err := teardownhttp.ParseDesignRef(href)
		if want == 0 {
			assert.Error(t, err, href)
			continue
		}
		require.NoError(t, err, href)
		assert.Equal(t, want, got, href)
	}
	r := teardownhttp.NewDesignRef("deckhand+https://deckhand.example/api/v1.0/", 3)
	assert.Equal(t, "deckhand+https://deckhand.example/api/v1.0/revisions/3/rendered-documents", r.Href)
	n, err := r.Revision()
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}
