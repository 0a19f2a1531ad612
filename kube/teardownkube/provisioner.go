package teardownkube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/internal/kubeobj"
	"github.com/fencekit/fencekit/teardown"
)

// BareMetalHostKind is metal3's BareMetalHost kind.
var BareMetalHostKind = kubeobj.BareMetalHost

// RevisionAnnotation records on a BareMetalHost the design revision it was
// destroyed for (the teardown design's design_id), so that the redeploy
// that follows, and a rerun, know it.
const RevisionAnnotation = "fencekit.io/design-revision"

// The cleaning modes of a BareMetalHost's spec.automatedCleaningMode.
const (
	// CleaningMetadata: the operator wipes the disks' metadata (partition
	// tables, file system signatures) when it deprovisions the host.
	CleaningMetadata = "metadata"
	// CleaningDisabled: the operator leaves the disks as they are.
	CleaningDisabled = "disabled"
)

// Defaults of BareMetalHostOptions.
const (
	// DefaultProvisionerPoll is the interval between two reads of a host
	// while its deprovisioning runs.
	DefaultProvisionerPoll = 5 * time.Second
)

// BareMetalHostOptions tune a BareMetalHosts provisioner.
type BareMetalHostOptions struct {
	// Namespace holds the hosts. Required unless HostOf is set.
	Namespace string
	// HostOf returns the namespace and name of a node's host; nil means
	// Namespace and the node's name.
	HostOf func(ctx context.Context, node string) (namespace, name string, err error)
	// Kind is the hosts' kind; zero means BareMetalHostKind.
	Kind schema.GroupVersionKind
	// Poll is the interval between two reads while waiting;
	// DefaultProvisionerPoll when zero.
	Poll time.Duration
}

// BareMetalHosts is a teardown.Provisioner over metal3's BareMetalHosts,
// with the baremetal-operator doing the work:
//
//   - Destroy deprovisions the host: spec.image removed, spec.online
//     false, spec.automatedCleaningMode metadata for teardown.WipeAll (the
//     operator wipes the disks' metadata) or disabled for
//     teardown.WipeOSDisk (the data disks are kept; the OS disk is written
//     over by the next provisioning), and the design revision in the
//     annotation fencekit.io/design-revision. It returns once the operator
//     reports the host deprovisioned (status.provisioning.state available
//     or ready, no image), and fails when it reports an error
//     (status.errorType) or the context ends.
//   - Release clears spec.consumerRef, the claim of the cluster's machine
//     (Cluster API's Metal3Machine) on the host: the host is free for
//     another deployment. The teardown calls it only after the power-off
//     step confirmed the host off.
//
// Both find what is already done and do nothing more (reruns).
type BareMetalHosts struct {
	client client.Client
	o      BareMetalHostOptions
}

// NewBareMetalHosts returns the provisioner over c, a controller-runtime
// client that reads the API server (a manager's client reads unstructured
// objects from it, unless told to cache them).
func NewBareMetalHosts(c client.Client, o BareMetalHostOptions) (*BareMetalHosts, error) {
	if c == nil {
		return nil, errors.New("teardownkube: NewBareMetalHosts needs a client")
	}
	if o.Namespace == "" && o.HostOf == nil {
		return nil, errors.New("teardownkube: NewBareMetalHosts needs a namespace or HostOf")
	}
	if o.Kind.Empty() {
		o.Kind = BareMetalHostKind
	}
	if o.Poll <= 0 {
		o.Poll = DefaultProvisionerPoll
	}
	return &BareMetalHosts{client: c, o: o}, nil
}

// get reads the host namespace/name.
func (b *BareMetalHosts) get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	h := kubeobj.Object(b.o.Kind, "", "")
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, h); err != nil {
		return nil, err
	}
	return h, nil
}

// patch writes a JSON merge patch to the host namespace/name.
func (b *BareMetalHosts) patch(ctx context.Context, namespace, name string, data []byte) error {
	return b.client.Patch(ctx, kubeobj.Object(b.o.Kind, namespace, name), client.RawPatch(types.MergePatchType, data))
}

// host returns the node's host's namespace and name.
func (b *BareMetalHosts) host(ctx context.Context, node string) (string, string, error) {
	if b.o.HostOf != nil {
		return b.o.HostOf(ctx, node)
	}
	return b.o.Namespace, node, nil
}

// CleaningMode returns the cleaning mode of a wipe.
func CleaningMode(w teardown.Wipe) (string, error) {
	switch w {
	case teardown.WipeAll:
		return CleaningMetadata, nil
	case teardown.WipeOSDisk:
		return CleaningDisabled, nil
	}
	return "", fmt.Errorf("no cleaning mode for %v", w)
}

// Destroy deprovisions the node's host and waits until the operator
// reports it done.
func (b *BareMetalHosts) Destroy(ctx context.Context, node string, opts teardown.DestroyOptions) error {
	ns, name, err := b.host(ctx, node)
	if err != nil {
		return err
	}
	mode, err := CleaningMode(opts.Wipe)
	if err != nil {
		return err
	}
	ref := ns + "/" + name
	h, err := b.get(ctx, ns, name)
	if err != nil {
		return fmt.Errorf("BareMetalHost %s: %w", ref, err)
	}
	// A host deprovisioned already, with another cleaning mode than the
	// one asked for, was not cleaned as asked: the operator cleans only on
	// the way to available, so switching the mode now would report a wipe
	// that never ran (or, the other way, disks kept that were wiped).
	if done, err := deprovisioned(h); err == nil && done {
		if prev, _, _ := unstructured.NestedString(h.Object, "spec", "automatedCleaningMode"); prev != mode {
			return fmt.Errorf("BareMetalHost %s: %w: already deprovisioned with cleaning mode %q, not %q: clean it by hand (or provision and deprovision it again)", ref, teardown.ErrNotReady, prev, mode)
		}
	}
	meta := map[string]any{}
	if opts.Revision != 0 {
		meta["annotations"] = map[string]any{RevisionAnnotation: strconv.Itoa(opts.Revision)}
	}
	if !deprovisionAsked(h, mode) || (opts.Revision != 0 && h.GetAnnotations()[RevisionAnnotation] != strconv.Itoa(opts.Revision)) {
		patch, err := json.Marshal(map[string]any{
			"metadata": meta,
			"spec":     map[string]any{"image": nil, "online": false, "automatedCleaningMode": mode},
		})
		if err != nil {
			return err
		}
		if err := b.patch(ctx, ns, name, patch); err != nil {
			return fmt.Errorf("BareMetalHost %s: deprovision: %w", ref, err)
		}
	}
	tick := time.NewTicker(b.o.Poll)
	defer tick.Stop()
	for {
		h, err := b.get(ctx, ns, name)
		if err != nil {
			return fmt.Errorf("BareMetalHost %s: %w", ref, err)
		}
		done, err := deprovisioned(h)
		if err != nil {
			return fmt.Errorf("BareMetalHost %s: %w", ref, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			state, _, _ := unstructured.NestedString(h.Object, "status", "provisioning", "state")
			return fmt.Errorf("BareMetalHost %s: not deprovisioned (state %q): %w", ref, state, ctx.Err())
		case <-tick.C:
		}
	}
}

// deprovisionAsked reports whether the host's spec already asks for the
// deprovisioning with the cleaning mode.
func deprovisionAsked(h *unstructured.Unstructured, mode string) bool {
	_, hasImage, _ := unstructured.NestedFieldNoCopy(h.Object, "spec", "image")
	online, _, _ := unstructured.NestedBool(h.Object, "spec", "online")
	m, _, _ := unstructured.NestedString(h.Object, "spec", "automatedCleaningMode")
	return !hasImage && !online && m == mode
}

// deprovisioned reads the operator's status: done once the host is
// available (or ready, its older name) with no image, an error when the
// operator records one.
func deprovisioned(h *unstructured.Unstructured) (bool, error) {
	if et, _, _ := unstructured.NestedString(h.Object, "status", "errorType"); et != "" {
		msg, _, _ := unstructured.NestedString(h.Object, "status", "errorMessage")
		return false, fmt.Errorf("the operator reports %s: %s", et, msg)
	}
	state, _, _ := unstructured.NestedString(h.Object, "status", "provisioning", "state")
	image, _, _ := unstructured.NestedString(h.Object, "status", "provisioning", "image", "url")
	return (state == "available" || state == "ready") && image == "", nil
}

// Release clears the host's consumerRef. A host that has none, or that is
// gone, is released already.
func (b *BareMetalHosts) Release(ctx context.Context, node string) error {
	ns, name, err := b.host(ctx, node)
	if err != nil {
		return err
	}
	h, err := b.get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("BareMetalHost %s/%s: %w", ns, name, err)
	}
	if _, has, _ := unstructured.NestedFieldNoCopy(h.Object, "spec", "consumerRef"); !has {
		return nil
	}
	patch := []byte(`{"spec":{"consumerRef":null}}`)
	if err := b.patch(ctx, ns, name, patch); err != nil {
		return fmt.Errorf("BareMetalHost %s/%s: release: %w", ns, name, err)
	}
	return nil
}

var _ teardown.Provisioner = (*BareMetalHosts)(nil)
