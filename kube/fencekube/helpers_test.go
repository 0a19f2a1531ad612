package fencekube_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubefake"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

var (
	gvr = fencekube.NodeFenceResource
	gr  = gvr.GroupResource()
)

// fakeAPI is controller-runtime's fake client (fakeObjects), which records
// the calls made and fails the next call of a verb when asked to.
type fakeAPI struct {
	*kubefake.Client
	t  *testing.T
	mu sync.Mutex
	// fail, when set, is returned by the next call of verb (and
	// subresource, as "update/status") once.
	fail map[string]error
	// hook, when set, is asked before every call: an error it returns is
	// the call's.
	hook func(verb string, obj any) error
}

func newFakeAPI(t *testing.T, objs ...client.Object) *fakeAPI {
	copies := make([]client.Object, len(objs))
	for i, o := range objs {
		copies[i] = o.DeepCopyObject().(client.Object)
	}
	f := &fakeAPI{t: t, fail: map[string]error{}}
	f.Client = kubefake.New(fakeObjects(t, copies...), func(r kubefake.Request) error {
		f.mu.Lock()
		err := f.fail[r.Verb]
		delete(f.fail, r.Verb)
		hook := f.hook
		f.mu.Unlock()
		if err == nil && hook != nil {
			err = hook(r.Verb, r.Object)
		}
		return err
	})
	return f
}

// ops returns the calls made since the last clearCalls, each as "verb
// resource namespace/name".
func (f *fakeAPI) ops() []string {
	var out []string
	for _, r := range f.Requests() {
		op := r.Verb + " " + resourceOf(r.Object)
		if _, list := r.Object.(client.ObjectList); !list {
			op += " " + client.ObjectKey{Namespace: r.Namespace, Name: r.Name}.String()
		}
		out = append(out, op)
	}
	return out
}

// deletes returns the options of the deletes made since the last
// clearCalls.
func (f *fakeAPI) deletes() []client.DeleteOptions {
	var out []client.DeleteOptions
	for _, r := range f.Requests() {
		if r.Verb == "delete" {
			out = append(out, r.Delete)
		}
	}
	return out
}

// resourceOf names the resource of an object or list, as a test reads it.
func resourceOf(obj any) string {
	switch obj.(type) {
	case *corev1.Node, *corev1.NodeList:
		return "nodes"
	case *corev1.Pod, *corev1.PodList:
		return "pods"
	case *storagev1.VolumeAttachmentList:
		return "volumeattachments"
	case *corev1.ConfigMapList:
		return "configmaps"
	case *fencekube.NodeFence, *fencekube.NodeFenceList:
		return "nodefences"
	}
	return fmt.Sprintf("%T", obj)
}

// opsOf returns the calls of verb as "resource namespace/name".
func (f *fakeAPI) opsOf(verb string) []string {
	var out []string
	for _, op := range f.ops() {
		if v, rest, _ := strings.Cut(op, " "); v == verb {
			out = append(out, rest)
		}
	}
	return out
}

// count returns how many times verb was called since the last clearCalls.
func (f *fakeAPI) count(verb string) int {
	n := 0
	for _, v := range f.calls() {
		if v == verb {
			n++
		}
	}
	return n
}

// calls returns the verbs called since the last clearCalls.
func (f *fakeAPI) calls() []string {
	var out []string
	for _, r := range f.Requests() {
		out = append(out, r.Verb)
	}
	return out
}

func (f *fakeAPI) clearCalls() {
	f.Take()
}

// stored returns the object as the fake holds it, nil when there is none.
func (f *fakeAPI) stored(name string) *fencekube.NodeFence {
	f.t.Helper()
	o := &fencekube.NodeFence{}
	err := f.Fake.Get(context.Background(), client.ObjectKey{Name: name}, o)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(f.t, err)
	return o
}

// edit changes the stored object as another client would (spec and
// metadata, then status), bumping its resourceVersion.
func (f *fakeAPI) edit(name string, change func(o *fencekube.NodeFence)) {
	f.t.Helper()
	o := f.stored(name)
	require.NotNil(f.t, o)
	change(o)
	status := o.Status
	require.NoError(f.t, f.Fake.Update(context.Background(), o))
	o.Status = status
	require.NoError(f.t, f.Fake.Status().Update(context.Background(), o))
}

// object returns a well-formed NodeFence object of node.
func object(t testing.TB, nf *flow.NodeFence) *fencekube.NodeFence {
	t.Helper()
	return fencekube.FromRecord(nf)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sample returns a record that uses every field.
func sample(node string) *flow.NodeFence {
	return &flow.NodeFence{
		Node: node, Step: fence.StepPowerManagement, Status: flow.StatusRunning, Retries: 1, Polls: 2,
		Jobs: []flow.Job{
			{Step: fence.StepPowerManagement, Level: 0, Index: 0, Method: "pdu-off", Owner: "c1",
				Action: fence.ActionReboot, Phase: fence.ActionOff,
				Started: t0.Add(time.Second), Finished: t0.Add(2 * time.Second), OK: true, OffConfirmed: true,
				State: fence.StateOff},
			{Step: fence.StepPowerManagement, Level: 0, Index: 1, Method: "pdu-on", Owner: "c1",
				Action: fence.ActionOn, Phase: fence.ActionOn,
				Started: t0.Add(3*time.Second + 123456*time.Microsecond)},
			{Step: fence.StepPowerManagement, Level: 1, Index: 0, Method: "bmc", Owner: "c2",
				Started: t0, Finished: t0, BestEffort: true, Already: true, Unknown: true, State: fence.StateOn,
				Error: "fence: outcome unknown"},
		},
		Isolated: true, PoweredOff: true, Released: flow.ReleaseStorage, Releasing: flow.ReleasePower,
		Restoring: true, FencedAt: t0.Add(2 * time.Second), PodsWaitSince: t0.Add(3 * time.Second),
		OnError: "pdu-on: refused", FoundOn: "pdu-off read the node on at 2026-03-01T12:01:00Z", OffCheckedAt: t0.Add(time.Minute),
		Created: t0.Add(-time.Hour), StepStarted: t0, Changed: t0.Add(time.Second), LastPoll: t0.Add(time.Minute),
		Message: "running power_management level 1",
		History: []flow.Transition{
			{Time: t0.Add(-time.Hour), Step: fence.StepIsolation, Status: flow.StatusNew, Message: "fencing starts"},
			{Time: t0, Step: fence.StepPowerManagement, Status: flow.StatusRunning},
		},
	}
}

// runHealth gives h a Node informer of client (NewNodeInformer, as a host
// without a manager runs one), run until the test ends.
func runHealth(t testing.TB, client kubernetes.Interface, h *fencekube.Health) {
	t.Helper()
	inf := fencekube.NewNodeInformer(client, fencekube.SummarizeNode)
	h.UseInformer(inf)
	run(t, inf.RunWithContext)
}

// runConfigMaps gives c an informer of the ConfigMaps of namespace, run
// until the test ends.
func runConfigMaps(t testing.TB, client kubernetes.Interface, namespace string, c *fencekube.ConfigSource) {
	t.Helper()
	inf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace)).Core().V1().ConfigMaps().Informer()
	_ = inf.SetTransform(fencekube.StripConfigMap)
	c.UseInformer(inf)
	run(t, inf.RunWithContext)
}

// run runs f until the test ends, and waits for it then.
func run(t testing.TB, f func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// fakeObjects returns controller-runtime's fake client holding objs, with the
// core types and fencekit's API, NodeFence's status subresource and the
// index of pods by node the ports list them by.
func fakeObjects(t testing.TB, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, fencekube.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&fencekube.NodeFence{}).
		WithIndex(&corev1.Pod{}, fencekube.PodNodeNameField, func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}).WithObjects(objs...).Build()
}

// runAdapters returns a Health of the cluster's Nodes and a ConfigSource
// of namespace ns, on informers run until the test ends, synced.
func runAdapters(t testing.TB, c *kubetest.Cluster, ns string) (*fencekube.Health, *fencekube.ConfigSource) {
	t.Helper()
	h := fencekube.NewHealth()
	runHealth(t, c.Client(), h)
	cfg := fencekube.NewConfigSource(c.Objects(), ns, fencekube.ConfigOptions{})
	runConfigMaps(t, c.Client(), ns, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, h.WaitForSync(ctx))
	require.NoError(t, cfg.WaitForSync(ctx))
	return h, cfg
}
