package rebootkube_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubefake"
	"github.com/fencekit/fencekit/kube/rebootkube"
	"github.com/fencekit/fencekit/reboot"
)

// host describes a BareMetalHost for a test.
type host struct {
	ns, name    string
	annotations map[string]string
	online      bool
	state       string // status.provisioning.state
	poweredOn   *bool  // status.poweredOn; nil: absent
	pending     string // status.provisioning.pendingRebootSince
	lastOn      string // status.provisioning.lastPoweredOn
	errorType   string
}

func ptr[T any](v T) *T { return &v }

// object returns the host as an object with metadata and spec, and its
// status apart (a resource with a status subresource takes it apart).
func (h host) object() (obj *unstructured.Unstructured, status map[string]any) {
	meta := map[string]any{"name": h.name, "namespace": h.ns}
	if h.annotations != nil {
		a := map[string]any{}
		for k, v := range h.annotations {
			a[k] = v
		}
		meta["annotations"] = a
	}
	obj = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1",
		"kind":       "BareMetalHost",
		"metadata":   meta,
		"spec":       map[string]any{"online": h.online},
	}}
	prov := map[string]any{"state": h.state}
	if h.pending != "" {
		prov["pendingRebootSince"] = h.pending
	}
	if h.lastOn != "" {
		prov["lastPoweredOn"] = h.lastOn
	}
	status = map[string]any{"provisioning": prov}
	if h.poweredOn != nil {
		status["poweredOn"] = *h.poweredOn
	}
	if h.errorType != "" {
		status["errorType"] = h.errorType
		status["errorMessage"] = "an earlier failure"
	}
	return obj, status
}

// full returns the host as one object, status included, as a fake client
// stores it.
func (h host) full() *unstructured.Unstructured {
	obj, status := h.object()
	obj.Object["status"] = status
	obj.SetResourceVersion("1")
	return obj
}

// clock is a fake clock that moves one second on every reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// bmc returns a fake BMC with one plug, in state initial, and its method.
func bmc(initial fence.State) (*fake.Device, *fence.Method) {
	dev := fake.New(fake.Options{Plugs: []string{""}, Initial: initial})
	return dev, method(dev)
}

func method(dev fence.Device) *fence.Method {
	return &fence.Method{
		Name: "bmc", Node: "host-0", Driver: "fake", Device: dev,
		Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: 2 * time.Second, IOTimeout: 2 * time.Second},
	}
}

func reconciler(hosts rebootkube.Store, m *fence.Method) *rebootkube.Reconciler {
	return &rebootkube.Reconciler{
		Hosts:       hosts,
		Method:      func(context.Context, *rebootkube.Host) (*fence.Method, error) { return m, nil },
		SoftTimeout: time.Second,
		Now:         newClock().Now,
	}
}

// settle reconciles until a decision asks for nothing, reconciling again
// at once after a conflict, and returns the reasons of the decisions that
// did something (and of conflicts).
func settle(t *testing.T, r *rebootkube.Reconciler, ns, name string) []string {
	t.Helper()
	var reasons []string
	for range 20 {
		d, err := r.Reconcile(t.Context(), ns, name)
		if errors.Is(err, rebootkube.ErrConflict) {
			reasons = append(reasons, "conflict")
			continue
		}
		require.NoError(t, err)
		if d.Nothing() {
			return reasons
		}
		reasons = append(reasons, d.Reason)
	}
	t.Fatalf("%s/%s did not settle: %q", ns, name, reasons)
	return nil
}

// hookStore calls hooks around another Store's operations, to play a
// concurrent client at the worst moment.
type hookStore struct {
	rebootkube.Store
	mu           sync.Mutex
	gets         int
	afterGet     func(n int) // after the n-th Get (1-based)
	beforeRemove func()
	beforeWrite  func(precondition bool)
}

func (s *hookStore) Get(ctx context.Context, ns, name string) (*rebootkube.Host, error) {
	h, err := s.Store.Get(ctx, ns, name)
	s.mu.Lock()
	s.gets++
	n, f := s.gets, s.afterGet
	s.mu.Unlock()
	if f != nil {
		f(n)
	}
	return h, err
}

func (s *hookStore) RemoveAnnotations(ctx context.Context, h *rebootkube.Host, keys []string) (*rebootkube.Host, error) {
	if f := s.beforeRemove; f != nil {
		s.beforeRemove = nil
		f()
	}
	return s.Store.RemoveAnnotations(ctx, h, keys)
}

func (s *hookStore) WriteStatus(ctx context.Context, h *rebootkube.Host, u rebootkube.StatusUpdate, precondition bool) (*rebootkube.Host, error) {
	if f := s.beforeWrite; f != nil {
		s.beforeWrite = nil
		f(precondition)
	}
	return s.Store.WriteStatus(ctx, h, u, precondition)
}

// guardDevice is a fake device that, before every power on, asks check
// whether powering on is allowed, and records the violations.
type guardDevice struct {
	*fake.Device
	check func(ctx context.Context) error

	mu         sync.Mutex
	violations []error
}

func (d *guardDevice) Set(ctx context.Context, plug string, s fence.State) error {
	if s == fence.StateOn {
		if err := d.check(ctx); err != nil {
			d.mu.Lock()
			d.violations = append(d.violations, err)
			d.mu.Unlock()
		}
	}
	return d.Device.Set(ctx, plug, s)
}

func (d *guardDevice) Violations() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]error(nil), d.violations...)
}

// noKeyedAnnotation is a guard check: the host namespace/name, read from
// c, has no keyed reboot annotation.
func noKeyedAnnotation(c crclient.Client, namespace, name string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(rebootkube.BareMetalHostKind)
		if err := c.Get(ctx, crclient.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return err
		}
		for k := range obj.GetAnnotations() {
			if reboot.IsAnnotation(k) && k != reboot.Annotation {
				return errors.New("powered on while " + k + " exists")
			}
		}
		return nil
	}
}

// fakeHosts is controller-runtime's fake client holding BareMetalHosts
// (with a status subresource, as a server has), which records the requests
// it is sent and lets a test play another client at the worst moment.
type fakeHosts struct {
	*kubefake.Client
	// beforeGet is called before the n-th get (1-based); beforePatch before
	// every patch, which fails with the error it returns.
	beforeGet   func(n int)
	beforePatch func(p patch) error

	gets atomic.Int32
}

type patch struct {
	Type        types.PatchType
	Subresource string
	Body        string
}

func newFakeHosts(objs ...*unstructured.Unstructured) *fakeHosts {
	kind := &unstructured.Unstructured{}
	kind.SetGroupVersionKind(rebootkube.BareMetalHostKind)
	b := crfake.NewClientBuilder().WithStatusSubresource(kind)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	f := &fakeHosts{}
	f.Client = kubefake.New(b.Build(), func(r kubefake.Request) error {
		switch verb, sub, _ := strings.Cut(r.Verb, "/"); verb {
		case "get":
			if n := int(f.gets.Add(1)); f.beforeGet != nil {
				f.beforeGet(n)
			}
		case "patch":
			if f.beforePatch != nil {
				return f.beforePatch(patch{r.PatchType, sub, r.Patch})
			}
		}
		return nil
	})
	return f
}

// patches returns the patches sent since the last call, and forgets the
// requests.
func patches(f *fakeHosts) []patch {
	var ps []patch
	for _, r := range f.Take() {
		if verb, sub, _ := strings.Cut(r.Verb, "/"); verb == "patch" {
			ps = append(ps, patch{r.PatchType, sub, r.Patch})
		}
	}
	return ps
}

// verbs returns the requests sent since the last call to patches.
func verbs(f *fakeHosts) []string {
	var vs []string
	for _, r := range f.Requests() {
		vs = append(vs, r.Verb)
	}
	return vs
}

// BareMetalHost is a user's Go type for the hosts, for the Typed store.
type BareMetalHost struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BareMetalHostSpec   `json:"spec,omitempty"`
	Status            BareMetalHostStatus `json:"status,omitempty"`
}

// BareMetalHostSpec is the spec of BareMetalHost.
type BareMetalHostSpec struct {
	Online bool `json:"online"`
}

// BareMetalHostStatus is the status of BareMetalHost.
type BareMetalHostStatus struct {
	PoweredOn    bool   `json:"poweredOn"`
	ErrorType    string `json:"errorType,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Provisioning struct {
		State              string       `json:"state,omitempty"`
		PendingRebootSince *metav1.Time `json:"pendingRebootSince,omitempty"`
		LastPoweredOn      *metav1.Time `json:"lastPoweredOn,omitempty"`
	} `json:"provisioning"`
}

// typedHosts is a typed client of the BareMetalHosts of one namespace, as
// a generated clientset would give, built on a controller-runtime client.
type typedHosts struct {
	c  crclient.Client
	ns string
}

func (c typedHosts) object(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rebootkube.BareMetalHostKind)
	u.SetNamespace(c.ns)
	u.SetName(name)
	return u
}

func (c typedHosts) Get(ctx context.Context, name string, _ metav1.GetOptions) (*BareMetalHost, error) {
	u := c.object(name)
	if err := c.c.Get(ctx, crclient.ObjectKeyFromObject(u), u); err != nil {
		return nil, err
	}
	return fromUnstructured(u)
}

func (c typedHosts) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, subresources ...string) (*BareMetalHost, error) {
	u, p := c.object(name), crclient.RawPatch(pt, data)
	var err error
	if len(subresources) == 0 {
		err = c.c.Patch(ctx, u, p)
	} else {
		err = c.c.SubResource(subresources[0]).Patch(ctx, u, p)
	}
	if err != nil {
		return nil, err
	}
	return fromUnstructured(u)
}

func fromUnstructured(u *unstructured.Unstructured) (*BareMetalHost, error) {
	var h BareMetalHost
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &h)
	return &h, err
}
