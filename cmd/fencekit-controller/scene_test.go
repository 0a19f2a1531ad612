package main

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// scene is where most tests of the deployed controller start: nodes
// PREFIX-w1, -w2, ..., ready for an hour and removed with their NodeFences
// when the test ends; the first few of them powered by outlets 1, 2, ...
// of one named fake PDU, through methods of the template "pdu"
// (power_management=pdu).
type scene struct {
	t     *testing.T
	c     *kubetest.Cluster
	admin kubernetes.Interface
	ns    string
	// cfg is the configuration of the controller's service account.
	cfg   *rest.Config
	nodes []string
	pdu   *fake.Device
	// records reads the NodeFences.
	records *records
}

// newScene sets a scene of n nodes, the first fenced of them powered by
// the PDU, in a namespace of the shared API server (deployed); template
// adds lines to the method template, such as "action=off\n".
func newScene(t *testing.T, n, fenced int, template string) *scene {
	t.Helper()
	c, _, ns, cfg := deployed(t)
	return sceneOn(t, c, ns, cfg, n, fenced, template)
}

// sceneOn sets the scene on c, in namespace ns.
func sceneOn(t *testing.T, c *kubetest.Cluster, ns string, cfg *rest.Config, n, fenced int, template string) *scene {
	t.Helper()
	prefix := kubetest.UniqueName(t)
	s := &scene{t: t, c: c, admin: c.Client(), ns: ns, cfg: cfg, records: newRecords(t, c.Objects())}
	var plugs []string
	for i := 1; i <= fenced; i++ {
		plugs = append(plugs, strconv.Itoa(i))
	}
	s.pdu = fake.NewNamed(prefix+"-pdu", fake.Options{Plugs: plugs})
	t.Cleanup(func() { fake.Forget(prefix + "-pdu") })
	createConfigMap(t, s.admin, ns, "fence-method-template-pdu", "template.properties",
		"name=pdu\ndriver=fake\naddress=fake://"+prefix+"-pdu\nstonith_status_sleep=0\npower_timeout=2\n"+template)
	for i := 1; i <= n; i++ {
		node := prefix + "-w" + strconv.Itoa(i)
		s.nodes = append(s.nodes, node)
		createNode(t, s.admin, node, corev1.ConditionTrue, time.Now().Add(-time.Hour))
		t.Cleanup(func() { removeNodeAndFence(t, c, node) })
		if i <= fenced {
			createConfigMap(t, s.admin, ns, "fence-method-pdu-"+node, "method.properties", "template=pdu\nplug="+strconv.Itoa(i)+"\n")
			createConfigMap(t, s.admin, ns, "fence-config-"+node, "config.properties", "node_name="+node+"\npower_management=pdu\n")
		}
	}
	return s
}

// start runs the program in the scene's namespace, without leader
// election, with quick passes (a node unhealthy after 1 s), and args;
// it waits until the program leads.
func (s *scene) start(args ...string) *started {
	s.t.Helper()
	return startRun(s.t, s.cfg, true, append([]string{"--namespace=" + s.ns, "--leader-elect=false", "--unhealthy-after=1s",
		"--interval=200ms", "--log-format=text", "--sync-timeout=20s"}, args...)...)
}

// down makes nodes not ready for a minute, as if their kubelets had
// stopped.
func (s *scene) down(nodes ...string) {
	s.t.Helper()
	for _, n := range nodes {
		setReady(s.t, s.admin, n, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	}
}

// record waits up to within for node's NodeFence to be as ok says, and
// returns it.
func (s *scene) record(node, what string, within time.Duration, ok func(*flow.NodeFence) bool) *flow.NodeFence {
	s.t.Helper()
	return s.records.wait(node, what, within, ok)
}

// message returns node's NodeFence's message, or "" while it has none.
func (s *scene) message(node string) string {
	if nf := s.records.get(node); nf != nil {
		return nf.Message
	}
	return ""
}

// records reads the NodeFences of a cluster, for a test that waits on
// them.
type records struct {
	t     *testing.T
	store *fencekube.Store
}

func newRecords(t *testing.T, c client.Client) *records {
	return &records{t: t, store: fencekube.NewStore(c, fencekube.StoreOptions{})}
}

// get returns node's NodeFence, or nil while it has none. Another error
// fails the test with t.Errorf, never FailNow: conditions of
// require.Eventually call get from goroutines of their own.
func (r *records) get(node string) *flow.NodeFence {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nf, err := r.store.Get(ctx, node)
	if err != nil {
		if !errors.Is(err, controller.ErrNotFound) {
			r.t.Errorf("reading the NodeFence of %s: %v", node, err)
		}
		return nil
	}
	return nf
}

// wait waits up to within for node's NodeFence to be as ok says, and
// returns it; it fails the test with the last record read (or error).
func (r *records) wait(node, what string, within time.Duration, ok func(*flow.NodeFence) bool) *flow.NodeFence {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		nf, err := r.store.Get(context.Background(), node)
		if err == nil && ok(nf) {
			return nf
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: %s not reached after %v; last record: %+v (%v)", node, what, within, nf, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
