package teardownhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/teardown"
)

// maxAnswerBytes bounds an answer the client reads.
const maxAnswerBytes = 4 << 20

// Client calls a server that runs NewHandler, as a deployment tool does
// (Shipyard, in Airship's node teardown design). Give it an http.Client
// whose Transport authenticates (apiauth.Transport with apiauth.Bearer or
// an *apiauth.HMAC) and trusts the server's certificate, and no Timeout
// shorter than the teardowns asked for: every call waits for its steps to
// be over. Bound a call with its context instead.
type Client struct {
	// BaseURL is the server's URL, such as "https://teardown.example:8443".
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// StatusError is an answer whose code is not 2xx: the status response,
// whose Reason, Code and Details say what happened.
type StatusError struct {
	Status *teardown.Status
}

// Error returns "teardown API: 409 Conflict: message".
func (e *StatusError) Error() string {
	return fmt.Sprintf("teardown API: %d %s: %s", e.Status.Code, e.Status.Reason, e.Status.Message)
}

// Decommission drains the node, clears its labels, removes its etcd
// members, waits for etcd and shuts its kubelet down (the design's
// decommission), with the timeouts that are set in t (Drain,
// DrainGracePeriod, ClearLabels, RemoveEtcd, EtcdReady, ShutdownKubelet;
// the others are refused by the server).
func (c *Client) Decommission(ctx context.Context, node string, ref DesignRef, t teardown.Timeouts) (*teardown.Status, error) {
	return c.post(ctx, PathDecommission, node, teardown.Request{Timeouts: t}.Query(), &ref)
}

// Drain cordons and drains the node; zero durations take the server's
// defaults.
func (c *Client) Drain(ctx context.Context, node string, timeout, gracePeriod time.Duration) (*teardown.Status, error) {
	q := timeoutQuery(timeout)
	if gracePeriod != 0 {
		q.Set(ParamGracePeriod, seconds(gracePeriod))
	}
	return c.post(ctx, PathDrain, node, q, nil)
}

// ClearLabels removes the labels added to the node.
func (c *Client) ClearLabels(ctx context.Context, node string, timeout time.Duration) (*teardown.Status, error) {
	return c.post(ctx, PathClearLabels, node, timeoutQuery(timeout), nil)
}

// RemoveEtcd removes the node's etcd members from their clusters.
func (c *Client) RemoveEtcd(ctx context.Context, node string, ref DesignRef, timeout time.Duration) (*teardown.Status, error) {
	return c.post(ctx, PathRemoveEtcd, node, timeoutQuery(timeout), &ref)
}

// ShutdownKubelet labels the node for the kubelet-stopping DaemonSet and
// waits for its kubelet to stop.
func (c *Client) ShutdownKubelet(ctx context.Context, node string, timeout time.Duration) (*teardown.Status, error) {
	return c.post(ctx, PathShutdownKubelet, node, timeoutQuery(timeout), nil)
}

// Destroy wipes the node (only its OS disk with preserveLocalStorage),
// powers it off with a device's confirmation and releases it from the
// provisioner, with the timeouts set in t (DestroyNode, PowerOff,
// ReleaseNode).
func (c *Client) Destroy(ctx context.Context, node string, ref DesignRef, preserveLocalStorage bool, t teardown.Timeouts) (*teardown.Status, error) {
	return c.post(ctx, PathDestroy, node, teardown.Request{PreserveLocalStorage: preserveLocalStorage, Timeouts: t}.Query(), &ref)
}

// RemoveFromCluster deletes the node's Node once it is cordoned, drained
// and free of labels (409 Conflict otherwise).
func (c *Client) RemoveFromCluster(ctx context.Context, node string, timeout time.Duration) (*teardown.Status, error) {
	return c.post(ctx, PathRemoveFromCluster, node, timeoutQuery(timeout), nil)
}

// Redeploy runs the whole teardown of req.Node (its Addresses and Labels
// have no parameter and are not sent).
func (c *Client) Redeploy(ctx context.Context, req teardown.Request) (*teardown.Status, error) {
	return c.post(ctx, PathRedeploy, req.Node, req.Query(), nil)
}

// EtcdHealth returns the health of every member of the site's etcd
// clusters, one HealthMessage each.
func (c *Client) EtcdHealth(ctx context.Context, ref DesignRef) (*teardown.Status, error) {
	u := c.url(PathEtcdHealth, "") + "?" + url.Values{ParamDesignRef: {ref.Href}}.Encode()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return c.do(r)
}

// post sends a POST to path for node.
func (c *Client) post(ctx context.Context, path, node string, q url.Values, ref *DesignRef) (*teardown.Status, error) {
	u := c.url(path, node)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body []byte
	if ref != nil {
		b, err := json.Marshal(ref)
		if err != nil {
			return nil, err
		}
		body = b
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if ref != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return c.do(r)
}

// url joins the base URL, the path and the node (escaped).
func (c *Client) url(path, node string) string {
	return strings.TrimSuffix(c.BaseURL, "/") + strings.Replace(path, "{node_id}", url.PathEscape(node), 1)
}

// do sends the request and reads the status response.
func (c *Client) do(r *http.Request) (*teardown.Status, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("teardown API: reading the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	var st teardown.Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" {
		return nil, fmt.Errorf("teardown API: HTTP %d: the answer is not a status response: %q", resp.StatusCode, clip(string(raw)))
	}
	if st.Code != resp.StatusCode {
		return nil, fmt.Errorf("teardown API: HTTP %d, but the status response says %d", resp.StatusCode, st.Code)
	}
	if resp.StatusCode/100 != 2 {
		return &st, &StatusError{Status: &st}
	}
	return &st, nil
}

func timeoutQuery(d time.Duration) url.Values {
	q := url.Values{}
	if d != 0 {
		q.Set(ParamTimeout, seconds(d))
	}
	return q
}

// seconds formats d in whole seconds, rounded up so that a timeout below a
// second is not sent as the default (0).
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
