package fencegroupkube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/internal/kubeobj"
)

// MachineStore lists the machines that may carry fence-group labels and
// writes those labels. Nodes and Machines implement it. Errors are *Error
// values.
type MachineStore interface {
	// List returns the machines, with their labels and the other names
	// their OSD hosts may go by.
	List(ctx context.Context) ([]fencegroup.Machine, error)
	// SetLabel adds (add true, with fencegroup.LabelValue) or removes the
	// label key on the machine name. It is idempotent: adding a label that
	// is there, or removing one that is not, succeeds.
	SetLabel(ctx context.Context, name, key string, add bool) error
}

// LabelPatch returns the JSON merge patch (RFC 7386) that adds the label
// key with fencegroup.LabelValue, or removes it: {"metadata":{"labels":
// {key:""}}} or {key:null}. No other label is touched.
func LabelPatch(key string, add bool) []byte {
	var v any
	if add {
		v = fencegroup.LabelValue
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	return data
}

// listPageSize and maxListPages bound a list: 500 objects a page, at most
// 200 pages (100,000 objects).
const (
	listPageSize = 500
	maxListPages = 200
)

// errTooMany is the cause of a list cut at maxListPages.
var errTooMany = fmt.Errorf("more than %d objects", listPageSize*maxListPages)

// listPages lists, page by page, the objects of namespace (all namespaces
// when empty) that selector selects, each page into a new list of
// newList, and calls page with it. An error of page is returned as it is.
func listPages[L client.ObjectList](ctx context.Context, c client.Reader, newList func() L, namespace, selector string, page func(L) error) error {
	sel, err := labels.Parse(selector)
	if err != nil {
		return fmt.Errorf("selector %q: %w", selector, err)
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}, client.Limit(listPageSize)}
	next := ""
	for range maxListPages {
		list := newList()
		if err := c.List(ctx, list, append(opts, client.Continue(next))...); err != nil {
			return err
		}
		if err := page(list); err != nil {
			return err
		}
		if next = list.GetContinue(); next == "" {
			return nil
		}
	}
	return errTooMany
}

// listError makes err, of a list of kind in namespace, an *Error.
func listError(kind, namespace string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Kind: kind, Namespace: namespace, Op: OpList, Err: err}
}

// setLabel patches obj's labels with LabelPatch.
func setLabel(ctx context.Context, c client.Client, obj client.Object, kind, key string, add bool) error {
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, LabelPatch(key, add))); err != nil {
		return &Error{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Op: OpLabel, Field: labelField(key), Err: err}
	}
	return nil
}

// Nodes is the MachineStore of Kubernetes Nodes. A node's other name is
// its kubernetes.io/hostname label.
type Nodes struct {
	// Client reads and patches the nodes. It must read the API server
	// (client.New, not a manager's cached client): the list goes by pages,
	// which a cache cannot serve.
	Client client.Client
	// Selector is a label selector limiting the nodes considered (such as
	// "node-role.kubernetes.io/storage"); empty means every node. A node
	// outside it is never labelled nor unlabelled.
	Selector string
}

// List returns the nodes, paging through the list.
func (n *Nodes) List(ctx context.Context) ([]fencegroup.Machine, error) {
	var out []fencegroup.Machine
	newList := func() *corev1.NodeList { return &corev1.NodeList{} }
	err := listPages(ctx, n.Client, newList, "", n.Selector, func(list *corev1.NodeList) error {
		for i := range list.Items {
			out = append(out, nodeMachine(&list.Items[i]))
		}
		return nil
	})
	if err != nil {
		return nil, listError(KindNode, "", err)
	}
	return out, nil
}

func nodeMachine(n *corev1.Node) fencegroup.Machine {
	m := fencegroup.Machine{Name: n.Name, Labels: n.Labels}
	if h := n.Labels[fencegroup.HostnameLabel]; h != "" && h != n.Name {
		m.Hosts = []string{h}
	}
	return m
}

// SetLabel patches the node's labels with LabelPatch.
func (n *Nodes) SetLabel(ctx context.Context, name, key string, add bool) error {
	return setLabel(ctx, n.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, KindNode, key, add)
}

// The Machine kinds of the two cluster-api flavours.
var (
	// OpenShiftMachines is machine.openshift.io/v1beta1 machines, as the
	// design's MachineHealthCheck and MachineDisruptionBudget act on.
	OpenShiftMachines = schema.GroupVersionKind{Group: "machine.openshift.io", Version: "v1beta1", Kind: "Machine"}
	// ClusterAPIMachines is cluster.x-k8s.io/v1beta1 machines (served,
	// deprecated, by Cluster API v1.11 and later).
	ClusterAPIMachines = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}
	// ClusterAPIMachinesV1Beta2 is cluster.x-k8s.io/v1beta2 machines, the
	// version Cluster API stores since v1.11; its status.nodeRef holds the
	// node's name only, at the same path.
	ClusterAPIMachinesV1Beta2 = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
)

// Machines is the MachineStore of cluster-api Machines of one namespace,
// read and patched as unstructured objects. A machine's other name is the
// node it became (status.nodeRef.name in both flavours).
type Machines struct {
	// Client reads and patches the Machines; it must read the API server,
	// as Nodes.Client (client.New).
	Client client.Client
	// Kind is the Machines' kind: OpenShiftMachines,
	// ClusterAPIMachinesV1Beta2, ClusterAPIMachines or another with the
	// node's name at NodeRef.
	Kind schema.GroupVersionKind
	// Namespace is the Machines' namespace (such as
	// "openshift-machine-api"). Required.
	Namespace string
	// Selector is a label selector limiting the machines considered; empty
	// means every machine of the namespace.
	Selector string
	// NodeRef is the path of the node's name in a Machine. Nil means
	// status.nodeRef.name.
	NodeRef []string
}

func (m *Machines) check() error {
	switch {
	case m.Namespace == "":
		return errors.New("no namespace given")
	case m.Kind.Kind == "" || m.Kind.Version == "":
		return errors.New("no kind given")
	}
	return nil
}

// List returns the machines, paging through the list.
func (m *Machines) List(ctx context.Context) ([]fencegroup.Machine, error) {
	if err := m.check(); err != nil {
		return nil, &Error{Kind: KindMachine, Namespace: m.Namespace, Op: OpList, Err: err}
	}
	path := m.NodeRef
	if path == nil {
		path = []string{"status", "nodeRef", "name"}
	}
	var out []fencegroup.Machine
	newList := func() *unstructured.UnstructuredList { return kubeobj.List(m.Kind) }
	err := listPages(ctx, m.Client, newList, m.Namespace, m.Selector, func(list *unstructured.UnstructuredList) error {
		for i := range list.Items {
			mc, err := machine(&list.Items[i], path)
			if err != nil {
				return err
			}
			out = append(out, mc)
		}
		return nil
	})
	if err != nil {
		return nil, listError(KindMachine, m.Namespace, err)
	}
	return out, nil
}

func machine(obj *unstructured.Unstructured, nodeRef []string) (fencegroup.Machine, error) {
	m := fencegroup.Machine{Name: obj.GetName(), Labels: obj.GetLabels()}
	node, found, err := unstructured.NestedString(obj.Object, nodeRef...)
	if err != nil {
		return m, &Error{Kind: KindMachine, Namespace: obj.GetNamespace(), Name: obj.GetName(), Op: OpRead,
			Field: joinPath(nodeRef), Err: errors.New("not a string")}
	}
	if found && node != "" && node != m.Name {
		m.Hosts = []string{node}
	}
	return m, nil
}

func joinPath(p []string) string { return strings.Join(p, ".") }

// SetLabel patches the Machine's labels with LabelPatch.
func (m *Machines) SetLabel(ctx context.Context, name, key string, add bool) error {
	if err := m.check(); err != nil {
		return &Error{Kind: KindMachine, Namespace: m.Namespace, Name: name, Op: OpLabel, Field: labelField(key), Err: err}
	}
	return setLabel(ctx, m.Client, kubeobj.Object(m.Kind, m.Namespace, name), KindMachine, key, add)
}

var (
	_ MachineStore = (*Nodes)(nil)
	_ MachineStore = (*Machines)(nil)
)
