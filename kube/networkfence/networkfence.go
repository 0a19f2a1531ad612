// Package networkfence fences a node from its storage through CSI-Addons'
// NetworkFence resource (csiaddons.openshift.io/v1alpha1), for clusters
// that run the CSI-Addons controller beside a CSI driver that implements
// its network fence (Ceph-CSI blocklists the CIDRs in Ceph): a fence
// driver ("networkfence") whose device is one cluster-scoped NetworkFence
// per node.
//
//   - off creates the NetworkFence with spec.fenceState Fenced and the
//     node's CIDRs; its spec is never changed after, so that its status
//     can only answer that request (a NetworkFence found in another state
//     is deleted first, and the off is not done until it is gone);
//   - status is off once the CSI-Addons controller reports status.result
//     Succeeded; on when there is no NetworkFence; unknown while it has
//     not answered, or while one is being deleted (its unfence under way);
//     an error, with the controller's message, when it reports Failed;
//   - on deletes the NetworkFence: CSI-Addons undoes the fence when it
//     goes (its finalizer), and the status says on once it is gone.
//
// The plug is the node's addresses and CIDRs, as drivers/cephblock takes
// them (fence.PlugNodeAddresses for the Node object's InternalIP
// addresses, filled in by the controller); each address becomes a /32 (or
// /128) CIDR.
//
// The driver needs a client of the cluster, so it is not registered at
// init: build it with Driver and register it in the registry the fence
// configuration is read with.
package networkfence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/drivers/cephblock"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/kubeobj"
)

// Name is the driver's name and address scheme.
const Name = "networkfence"

// Resource is CSI-Addons' NetworkFence.
var Resource = schema.GroupVersionResource{Group: "csiaddons.openshift.io", Version: "v1alpha1", Resource: "networkfences"}

// Kind is the NetworkFence's kind.
const Kind = "NetworkFence"

// The fence states and results of a NetworkFence.
const (
	StateFenced     = "Fenced"
	StateUnfenced   = "Unfenced"
	ResultSucceeded = "Succeeded"
	ResultFailed    = "Failed"
)

// Options configures a Device.
type Options struct {
	// Driver is the CSI driver's name (spec.driver), such as
	// rook-ceph.rbd.csi.ceph.com; or Class names a NetworkFenceClass
	// (spec.networkFenceClassName), which says the driver, secret and
	// parameters. One of the two is required.
	Driver, Class string
	// SecretName and SecretNamespace name the Secret the CSI driver
	// fences with (spec.secret), when Driver is used.
	SecretName, SecretNamespace string
	// Parameters are passed to the CSI driver (spec.parameters), such as
	// Ceph-CSI's clusterID.
	Parameters map[string]string
	// Name is the NetworkFence's name; empty means "fencekit-" and a
	// digest of the plug.
	Name string
	// MaxAddresses bounds the addresses one CIDR of a plug may cover; zero
	// means cephblock.DefaultMaxAddresses.
	MaxAddresses int
}

// RBAC, for methods of driver networkfence: CSI-Addons' NetworkFences
// (cluster-scoped) created with the node's CIDRs for an off, deleted for
// an on. Remove the rule when no method names networkfence.
// +kubebuilder:rbac:groups=csiaddons.openshift.io,resources=networkfences,verbs=get;list;create;delete

// Device is a fence.Device over NetworkFences.
type Device struct {
	c client.Client
	o Options
}

// New returns a Device over c, a controller-runtime client: client.New, or
// a manager's client (it reads unstructured objects, as this driver does,
// from the API server, not from its cache). It does no I/O.
func New(c client.Client, o Options) (*Device, error) {
	if o.Driver == "" && o.Class == "" {
		return nil, &fence.ParamError{Key: "csi_driver", Reason: "required (or class, a NetworkFenceClass)"}
	}
	if o.MaxAddresses == 0 {
		o.MaxAddresses = cephblock.DefaultMaxAddresses
	}
	if o.Name != "" {
		if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
			return nil, &fence.ParamError{Key: "name", Value: o.Name, Reason: strings.Join(errs, "; ")}
		}
	}
	return &Device{c: c, o: o}, nil
}

// cidrs parses a plug into the NetworkFence's CIDRs, sorted.
func (d *Device) cidrs(plug string) ([]string, error) {
	ps, err := cephblock.Prefixes(plug, d.o.MaxAddresses)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// name is the NetworkFence of a plug.
func (d *Device) name(cidrs []string) string {
	if d.o.Name != "" {
		return d.o.Name
	}
	sum := sha256.Sum256([]byte(strings.Join(cidrs, ",")))
	return "fencekit-" + hex.EncodeToString(sum[:6])
}

// Status reads the plug's NetworkFence (see the package documentation).
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	cidrs, err := d.cidrs(plug)
	if err != nil {
		return fence.StateUnknown, err
	}
	name := d.name(cidrs)
	u, err := d.get(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		return fence.StateOn, nil
	case err != nil:
		return fence.StateUnknown, fmt.Errorf("networkfence: reading NetworkFence %s: %w", name, err)
	}
	got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "cidrs")
	slices.Sort(got)
	if !slices.Equal(got, cidrs) {
		return fence.StateUnknown, fmt.Errorf("networkfence: NetworkFence %s fences %v, not the plug's %v", name, got, cidrs)
	}
	if u.GetDeletionTimestamp() != nil {
		return fence.StateUnknown, nil // being deleted: its unfence under way
	}
	state, _, _ := unstructured.NestedString(u.Object, "spec", "fenceState")
	result, _, _ := unstructured.NestedString(u.Object, "status", "result")
	message, _, _ := unstructured.NestedString(u.Object, "status", "message")
	switch {
	case state != StateFenced:
		return fence.StateUnknown, fmt.Errorf("networkfence: NetworkFence %s asks for %q, not Fenced: not one this driver wrote", name, state)
	case result == ResultFailed:
		return fence.StateUnknown, fmt.Errorf("networkfence: NetworkFence %s: the CSI-Addons controller reports the fence failed: %s", name, message)
	case result == ResultSucceeded:
		return fence.StateOff, nil
	}
	return fence.StateUnknown, nil // not answered yet
}

// Set creates the plug's NetworkFence, Fenced (off), or deletes it (on).
// A plug that does not parse is refused before any write, marked
// fence.NotDone.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	cidrs, err := d.cidrs(plug)
	if err != nil {
		return fence.NotDone(err)
	}
	if s != fence.StateOff && s != fence.StateOn {
		return fence.NotDone(fmt.Errorf("networkfence: cannot set %v", s))
	}
	name := d.name(cidrs)
	u, err := d.get(ctx, name)
	switch {
	case apierrors.IsNotFound(err) && s == fence.StateOn:
		return nil // nothing fenced
	case apierrors.IsNotFound(err):
		err = d.c.Create(ctx, d.object(name, cidrs, StateFenced))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fence.NotDone(fmt.Errorf("networkfence: creating NetworkFence %s: %w", name, err))
		}
		return nil
	case err != nil:
		return fence.NotDone(fmt.Errorf("networkfence: reading NetworkFence %s: %w", name, err))
	}
	got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "cidrs")
	slices.Sort(got)
	if !slices.Equal(got, cidrs) {
		return fence.NotDone(fmt.Errorf("networkfence: NetworkFence %s fences %v, not the plug's %v: name each node's method its own NetworkFence", name, got, cidrs))
	}
	state, _, _ := unstructured.NestedString(u.Object, "spec", "fenceState")
	switch {
	case u.GetDeletionTimestamp() != nil && s == fence.StateOn:
		return nil // going
	case u.GetDeletionTimestamp() != nil:
		return fence.NotDone(fmt.Errorf("networkfence: NetworkFence %s is being deleted (its unfence under way): fenced again once it is gone", name))
	case s == fence.StateOff && state == StateFenced:
		return nil // asked already: its answer is awaited (or given)
	}
	// The on, or an off over a NetworkFence in another state: deleted (a
	// new one answers the off, so that no answer to an earlier request
	// counts for it).
	if err := d.c.Delete(ctx, u, client.Preconditions{UID: ptr.To(u.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
		return fence.NotDone(fmt.Errorf("networkfence: deleting NetworkFence %s: %w", name, err))
	}
	if s == fence.StateOff {
		return fence.NotDone(fmt.Errorf("networkfence: NetworkFence %s asked for %q: deleted, fenced anew at the next attempt", name, state))
	}
	return nil
}

// get reads the NetworkFence name.
func (d *Device) get(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	u := kubeobj.Object(Resource.GroupVersion().WithKind(Kind), "", "")
	return u, d.c.Get(ctx, client.ObjectKey{Name: name}, u)
}

// Monitor checks that the API server answers and serves NetworkFences
// (fence.Monitor): the CSI-Addons CRDs are installed and the controller may
// list them.
func (d *Device) Monitor(ctx context.Context) error {
	l := kubeobj.List(Resource.GroupVersion().WithKind(Kind))
	if err := d.c.List(ctx, l, client.Limit(1)); err != nil {
		return fmt.Errorf("networkfence: listing NetworkFences (is CSI-Addons installed?): %w", err)
	}
	return nil
}

// object is the NetworkFence name asks for cidrs in state.
func (d *Device) object(name string, cidrs []string, state string) *unstructured.Unstructured {
	spec := map[string]any{"fenceState": state, "cidrs": toAny(cidrs)}
	if d.o.Class != "" {
		spec["networkFenceClassName"] = d.o.Class
	}
	if d.o.Driver != "" {
		spec["driver"] = d.o.Driver
	}
	if d.o.SecretName != "" {
		spec["secret"] = map[string]any{"name": d.o.SecretName, "namespace": d.o.SecretNamespace}
	}
	if len(d.o.Parameters) > 0 {
		p := map[string]any{}
		for k, v := range d.o.Parameters {
			p[k] = v
		}
		spec["parameters"] = p
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": Resource.GroupVersion().String(), "kind": Kind, "spec": spec}}
	u.SetName(name)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "fencekit"})
	return u
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Driver returns the "networkfence" driver over client c. Its parameters
// beyond the common ones: plug (the node's addresses and CIDRs, or
// @node-addresses), csi_driver or class (one required), secret_name and
// secret_namespace, cluster_id (Ceph-CSI's clusterID parameter), name (the
// NetworkFence's), max_addresses (16).
func Driver(c client.Client) fence.Driver {
	return fence.Driver{
		Name:          Name,
		Description:   "CSI-Addons NetworkFence: isolates a node from its storage through the CSI driver's network fence (Ceph-CSI blocklists its CIDRs), as Rook does for the out-of-service taint",
		DefaultAction: fence.ActionOff,
		IOTimeout:     10 * time.Second,
		// The controller and the CSI driver answer in seconds.
		PowerTimeout: 60 * time.Second,
		Params: []fence.ParamSpec{
			{Name: "plug", Aliases: []string{"port"}, Description: "The node's addresses and CIDRs, comma-separated, or @node-addresses (the Node object's InternalIP addresses)", Type: "string", Required: true},
			{Name: "csi_driver", Description: "The CSI driver's name (spec.driver), such as rook-ceph.rbd.csi.ceph.com", Type: "string"},
			{Name: "class", Description: "A NetworkFenceClass (spec.networkFenceClassName), instead of csi_driver, secret and parameters", Type: "string"},
			{Name: "secret_name", Description: "The Secret the CSI driver fences with", Type: "string"},
			{Name: "secret_namespace", Description: "Its namespace", Type: "string"},
			{Name: "cluster_id", Description: "Ceph-CSI's clusterID parameter", Type: "string"},
			{Name: "name", Description: "The NetworkFence's name (default: fencekit- and a digest of the plug)", Type: "string"},
			{Name: "max_addresses", Description: "The most addresses one CIDR of the plug may cover", Type: "integer", Default: "16"},
		},
		Check: func(a fence.Address, p fence.Params) error {
			o, err := optionsOf(a, p)
			if err != nil {
				return err
			}
			_, err = New(nil, o)
			return err
		},
		Open: func(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
			o, err := optionsOf(oo.Address, oo.Params)
			if err != nil {
				return nil, err
			}
			if c == nil {
				return nil, errors.New("networkfence: no cluster client")
			}
			return New(c, o)
		},
	}
}

func optionsOf(a fence.Address, p fence.Params) (Options, error) {
	var o Options
	if a.Driver != "" && (a.Driver != Name || a.Host != "" || a.Path != "" || len(a.Query) > 0) {
		return o, &fence.ParamError{Key: "address", Value: a.Scheme() + "://...", Reason: "a networkfence method takes no address"}
	}
	o.Driver, _ = p.Get("csi_driver")
	o.Class, _ = p.Get("class")
	o.SecretName, _ = p.Get("secret_name")
	o.SecretNamespace, _ = p.Get("secret_namespace")
	o.Name, _ = p.Get("name")
	if id, ok := p.Get("cluster_id"); ok {
		o.Parameters = map[string]string{"clusterID": id}
	}
	if (o.SecretName == "") != (o.SecretNamespace == "") {
		return o, &fence.ParamError{Key: "secret_namespace", Reason: "secret_name and secret_namespace go together"}
	}
	if n, ok, err := p.Int("max_addresses"); err != nil {
		return o, err
	} else if ok {
		if n < 1 || n > 1<<16 {
			return o, &fence.ParamError{Key: "max_addresses", Value: p["max_addresses"], Reason: "want 1 to 65536"}
		}
		o.MaxAddresses = n
	}
	return o, nil
}

var (
	_ fence.Device  = (*Device)(nil)
	_ fence.Monitor = (*Device)(nil)
)
