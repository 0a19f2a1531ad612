package teardownkube_test

import (
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/teardown"
	"github.com/fencekit/fencekit/teardown/teardownhttp"
)

// e2eToken is the bearer token of the end-to-end test's curl.
const e2eToken = "teardown-e2e-token-0123456789abcdef"

// curl returns a function that runs curl against the server (its CA
// trusted, the token sent when withToken) and returns the HTTP code and
// the body, as an operator's shell would.
func (s *site) curl(srv *httptest.Server) func(withToken bool, args ...string) (string, string) {
	bin := ipmisim.RequireTool(s.t, "curl", "curl")
	ca := filepath.Join(s.t.TempDir(), "ca.pem")
	require.NoError(s.t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	return func(withToken bool, args ...string) (string, string) {
		s.t.Helper()
		a := []string{"--silent", "--show-error", "--cacert", ca, "--write-out", "\n%{http_code}"}
		if withToken {
			a = append(a, "--header", "Authorization: Bearer "+e2eToken)
		}
		out, err := exec.CommandContext(s.ctx(), bin, append(a, args...)...).CombinedOutput()
		require.NoError(s.t, err, string(out))
		o := strings.TrimSpace(string(out))
		i := strings.LastIndexByte(o, '\n')
		return o[i+1:], strings.TrimSpace(o[:max(i, 0)])
	}
}

// The teardown API end to end: the executor of the other end-to-end tests
// (the real API server, a real three-member etcd cluster, fence levels of
// two PDU feeds) served by teardownhttp over TLS with HMAC-signed requests,
// and called as a deployment tool calls it in Airship's node teardown
// design: the etcd health, the decommission, the destroy (wipe, verified
// power off, release), the removal from the cluster; a second request for
// the node while one runs is 409, a replayed one 401, the removal made
// with curl and a bearer token (401 without it), and the node, once gone,
// 404.
func TestE2ETeardownHTTP(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	auth := &apiauth.HMAC{Key: key}
	// Programs sign their requests; an operator's curl bears a token.
	tokens, err := apiauth.NewTokens(e2eToken)
	require.NoError(t, err)
	srv := httptest.NewTLSServer(teardownhttp.NewHandler(s.x, teardownhttp.HandlerOptions{Auth: apiauth.AnyOf{auth, tokens}}))
	t.Cleanup(srv.Close)
	curl := s.curl(srv)
	hc := *srv.Client()
	hc.Transport = &apiauth.Transport{Signer: auth, Base: hc.Transport}
	client := &teardownhttp.Client{BaseURL: srv.URL, HTTPClient: &hc}
	ref := teardownhttp.NewDesignRef("deckhand+https://deckhand.example/api/v1.0", 1)
	ctx := s.ctx()

	// While the decommission waits for the kubelet, a second request for
	// the node is refused at once.
	var conflict *teardown.Status
	observe := s.x.Observer
	s.x.Observer = func(e teardown.StepEvent) {
		observe(e)
		if e.Step == teardown.StepShutdownKubelet && e.Type == teardown.EventStart {
			conflict, _ = client.RemoveFromCluster(ctx, s.node, 0)
		}
	}

	st, err := client.EtcdHealth(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, 200, st.Code)
	require.Len(t, st.Details.MessageList, 3)
	for _, m := range st.Details.MessageList {
		assert.Equal(t, teardown.Message{Message: "Healthy", Kind: teardown.KindHealth, Name: m.Name}, m)
	}

	st, err = client.Decommission(ctx, s.node, ref, teardown.Timeouts{Drain: time.Second, ClearLabels: 10 * time.Second,
		RemoveEtcd: 30 * time.Second, EtcdReady: 10 * time.Second, ShutdownKubelet: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "decommission of node "+s.node+": 5 done", st.Message)
	assert.Equal(t, slices.Sorted(slices.Values(s.peers)), s.etcdMembers(), "the node's etcd member removed")
	require.NotNil(t, conflict)
	assert.Equal(t, 409, conflict.Code)
	assert.Equal(t, teardown.ReasonConflict, conflict.Reason)
	assert.Contains(t, conflict.Message, "a decommission request for the node is running")
	_, err = s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	require.NoError(t, err, "the refused removal did nothing")

	st, err = client.EtcdHealth(ctx, ref)
	require.NoError(t, err)
	assert.Len(t, st.Details.MessageList, 2, "the two members left")

	st, err = client.Destroy(ctx, s.node, ref, false, teardown.Timeouts{DestroyNode: 10 * time.Second, PowerOff: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "destroy of node "+s.node+": 3 done", st.Message)
	assert.Equal(t, fence.StateOff, s.pduA.Truth("3"))
	assert.Equal(t, fence.StateOff, s.pduB.Truth("3"))

	// A captured request sent again is refused.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/etcd-cluster-health-statuses?design_ref="+url.QueryEscape(ref.Href), nil)
	require.NoError(t, err)
	require.NoError(t, auth.Sign(req))
	captured := req.Header.Clone()
	replay, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL.String(), nil)
	require.NoError(t, err)
	replay.Header = captured
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	resp, err = srv.Client().Do(replay)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode, "replayed")

	// The last call as an operator makes it with curl and a token (the
	// command in docs/teardown-and-reinstall.md). Without the token: 401, and the Node stays.
	code, out := curl(false, "-X", "POST", srv.URL+"/nodes/"+s.node+"/remove-from-cluster?timeout=60")
	assert.Equal(t, "401", code, out)
	assert.Contains(t, out, `"reason":"Unauthorized"`)
	_, err = s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	require.NoError(t, err, "the anonymous removal did nothing")
	code, out = curl(true, "-X", "POST", srv.URL+"/nodes/"+s.node+"/remove-from-cluster?timeout=60")
	assert.Equal(t, "200", code, out)
	assert.Contains(t, out, `"message":"remove-from-cluster: Node `+s.node+` deleted"`)

	s.checkTornDown()
	_, err = s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	st, err = client.RemoveFromCluster(ctx, s.node, 0)
	require.Error(t, err)
	assert.Equal(t, 404, st.Code)
	assert.Equal(t, teardown.ReasonNotFound, st.Reason)

	_, err = client.EtcdHealth(ctx, teardownhttp.DesignRef{})
	var se *teardownhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, teardown.ReasonMissingDesignRef, se.Status.Reason)
	assert.True(t, strings.HasPrefix(se.Error(), "teardown API: 400 MissingDesignRef: "), se.Error())
}
