package agentfence_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/agentfence"
	"github.com/fencekit/fencekit/nodeagent"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// Timings of the simulated agents: self-fence 0.2 s, watchdog 0.2 s,
// interval 0.05 s (a proof takes about a second).
const selfFence, watchdog, interval = 0.2, 0.2, 0.05

// agents plays the node agents on the real API server: the nodes it fences
// are dead (nobody renews their Leases), and two live peers report on every
// request at once, as not having heard the node since before they saw it.
// The truth of a node: off once a request for it has stood for its
// self-fence timeout and its watchdog's (its agent fenced it), on when
// none stands (it came back by itself).
type agents struct {
	c     kubernetes.Interface
	ns    string
	mu    sync.Mutex
	first map[string]time.Time // node/request -> when first seen
}

func publish(peers ...string) string {
	b, _ := json.Marshal(nodeagent.Published{Boot: "boot-1", Incarnation: "sim", State: nodeagent.StateRunning,
		SelfFenceTimeout: selfFence, WatchdogTimeout: watchdog, Interval: interval, Peers: peers})
	return string(b)
}

func (a *agents) lease(t *testing.T, node string, peers ...string) {
	_, err := a.c.CoordinationV1().Leases(a.ns).Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: nodeagent.LeasePrefix + node, Labels: map[string]string{nodeagent.LeaseLabel: nodeagent.LeaseLabelValue},
		Annotations: map[string]string{nodeagent.AgentAnnotation: publish(peers...)}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (a *agents) requests(ctx context.Context) map[string]string {
	cm, err := a.c.CoreV1().ConfigMaps(a.ns).Get(ctx, nodeagent.RequestsConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for node, v := range cm.Data {
		out[node] = nodeagent.RequestID(v)
	}
	return out
}

// run reports every 25 ms until t ends.
func (a *agents) run(t *testing.T, peers ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			reqs := a.requests(ctx)
			now := time.Now()
			reports := map[string]nodeagent.Report{}
			a.mu.Lock()
			for node, id := range reqs {
				k := node + "/" + id
				if _, ok := a.first[k]; !ok {
					a.first[k] = now
				}
				seen := now.Sub(a.first[k]).Seconds()
				reports[node] = nodeagent.Report{Request: id, SeenFor: seen, UnheardFor: seen + 1}
			}
			a.mu.Unlock()
			b, _ := json.Marshal(reports)
			for _, p := range peers {
				l, err := a.c.CoordinationV1().Leases(a.ns).Get(ctx, nodeagent.LeasePrefix+p, metav1.GetOptions{})
				if err != nil {
					continue
				}
				l.Annotations[nodeagent.ReportsAnnotation] = string(b)
				_, _ = a.c.CoordinationV1().Leases(a.ns).Update(ctx, l, metav1.UpdateOptions{})
			}
			select {
			case <-ctx.Done():
			case <-time.After(25 * time.Millisecond):
			}
		}
	}()
}

func (a *agents) truth(ctx context.Context, node string) (fence.State, error) {
	id, ok := a.requests(ctx)[node]
	if !ok {
		return fence.StateOn, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	first, ok := a.first[node+"/"+id]
	if ok && time.Since(first) >= time.Duration((selfFence+watchdog)*float64(time.Second)) {
		return fence.StateOff, nil
	}
	return fence.StateOn, nil
}

// The conformance suite on the real API server, with the agents simulated
// (their Leases and reports written by the test): each off is proven by
// time, after the node's agent must have fenced it, each on withdraws the
// request.
func TestConformance(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	a := &agents{c: c.Client(), ns: ns, first: map[string]time.Time{}}
	plugs := []string{"node-1", "node-2", "node-3"}
	for _, n := range plugs {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + n}}
		_, err := c.Client().CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
		require.NoError(t, err)
		node.Status.NodeInfo.BootID = "boot-1"
		_, err = c.Client().CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			got, _ := c.Client().CoreV1().Nodes().Get(t.Context(), node.Name, metav1.GetOptions{})
			got.Status.NodeInfo.BootID = "boot-1"
			_, err = c.Client().CoreV1().Nodes().UpdateStatus(t.Context(), got, metav1.UpdateOptions{})
		}
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = c.Client().CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		})
		a.lease(t, ns+"-"+n, "peer-1", "peer-2")
	}
	a.lease(t, "peer-1", "peer-2")
	a.lease(t, "peer-2", "peer-1")
	a.run(t, "peer-1", "peer-2")
	var full []string
	for _, p := range plugs {
		full = append(full, ns+"-"+p)
	}
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		dev, err := agentfence.New(c.Objects(), agentfence.Options{Namespace: ns})
		require.NoError(t, err)
		return &fencetest.Fixture{Device: dev, Plugs: full, MissingPlug: ns + "-no-agent", Truth: a.truth, Settle: 2 * time.Second}
	})
}
