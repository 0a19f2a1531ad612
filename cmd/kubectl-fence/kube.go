package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
)

// clients are what a command talks to the API server with: the
// clientset for the core and certificates APIs, and controller-runtime's
// typed client for NodeFences, as the controller reads them.
type clients struct {
	kube kubernetes.Interface
	api  crclient.Client
}

func newClients(flags *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubectl-fence"
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// The one kind it reads is known: no discovery (a RESTMapper that
	// asked the API server would cost a round trip per command).
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha1.GroupVersion.WithKind(v1alpha1.NodeFenceKind), meta.RESTScopeRoot)
	c, err := crclient.New(cfg, crclient.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	return &clients{kube: k, api: c}, nil
}

// nodeFence reads node's NodeFence; nil, nil when it has none.
func (c *clients) nodeFence(ctx context.Context, node string) (*v1alpha1.NodeFence, error) {
	nf := &v1alpha1.NodeFence{}
	err := c.api.Get(ctx, crclient.ObjectKey{Name: node}, nf)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the NodeFence of node %s: %w", node, err)
	}
	return nf, nil
}

// nodeFences lists the NodeFences, by node name.
func (c *clients) nodeFences(ctx context.Context) ([]v1alpha1.NodeFence, error) {
	var l v1alpha1.NodeFenceList
	if err := c.api.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing the NodeFences: %w", err)
	}
	out := l.Items
	slices.SortFunc(out, func(a, b v1alpha1.NodeFence) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// patchSpec merge-patches node's NodeFence spec with the fields of spec.
func (c *clients) patchSpec(ctx context.Context, node string, spec map[string]any) error {
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	nf := &v1alpha1.NodeFence{ObjectMeta: metav1.ObjectMeta{Name: node}}
	return c.api.Patch(ctx, nf, crclient.RawPatch(types.MergePatchType, patch), crclient.FieldOwner("kubectl-fence"))
}

// readNode checks a command's --wait, reads node's readiness and has admit
// refuse it (nothing read further), then reads its NodeFence (nil when it
// has none): what confirm and healthy decide on.
func readNode(ctx context.Context, flags *genericclioptions.ConfigFlags, node string, wait time.Duration, admit func(ready *corev1.NodeCondition) error) (*clients, *v1alpha1.NodeFence, error) {
	if wait < 0 {
		return nil, nil, usageErr("node %s: --wait is negative (%v)", node, wait)
	}
	c, err := newClients(flags)
	if err != nil {
		return nil, nil, err
	}
	ready, err := c.readiness(ctx, node)
	if err != nil {
		return nil, nil, err
	}
	if err := admit(ready); err != nil {
		return nil, nil, err
	}
	nf, err := c.nodeFence(ctx, node)
	if err != nil {
		return nil, nil, err
	}
	return c, nf, nil
}

// readiness says whether node is Ready ("True", "False", "Unknown"), and
// since when; "" when the node does not exist.
func (c *clients) readiness(ctx context.Context, node string) (*corev1.NodeCondition, error) {
	n, err := c.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", node, err)
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i], nil
		}
	}
	return &corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}, nil
}

// condition returns the condition typ of nf, or nil.
func condition(nf *v1alpha1.NodeFence, typ string) *metav1.Condition {
	for i := range nf.Status.Conditions {
		if nf.Status.Conditions[i].Type == typ {
			return &nf.Status.Conditions[i]
		}
	}
	return nil
}

// incident is the incident a confirmation of nf must name: status.incident,
// or, for a record written before it existed, status.created.
func incident(nf *v1alpha1.NodeFence) *metav1.MicroTime {
	if nf.Status.Incident != nil {
		return nf.Status.Incident
	}
	return nf.Status.Created
}
