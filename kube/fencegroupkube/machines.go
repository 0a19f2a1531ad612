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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/fencegroup"
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

// Nodes is the MachineStore of Kubernetes Nodes, through the typed client.
// A node's other name is its kubernetes.io/hostname label.
type Nodes struct {
	// Client is the clientset.
	Client kubernetes.Interface
	// Selector is a label selector limiting the nodes considered (such as
	// "node-role.kubernetes.io/storage"); empty means every node. A node
	// outside it is never labelled nor unlabelled.
	Selector string
}

// List returns the nodes, paging through the list.
func (n *Nodes) List(ctx context.Context) ([]fencegroup.Machine, error) {
	var out []fencegroup.Machine
	opts := metav1.ListOptions{LabelSelector: n.Selector, Limit: listPageSize}
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, &Error{Kind: KindNode, Op: OpList, Err: errTooMany}
		}
		list, err := n.Client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, &Error{Kind: KindNode, Op: OpList, Err: err}
		}
		for i := range list.Items {
			out = append(out, nodeMachine(&list.Items[i]))
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
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
	_, err := n.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, LabelPatch(key, add), metav1.PatchOptions{})
	if err != nil {
		return &Error{Kind: KindNode, Name: name, Op: OpLabel, Field: labelField(key), Err: err}
	}
	return nil
}

// The Machine resources of the two cluster-api flavours.
var (
	// OpenShiftMachines is machine.openshift.io/v1beta1 machines, as the
	// design's MachineHealthCheck and MachineDisruptionBudget act on.
	OpenShiftMachines = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machines"}
	// ClusterAPIMachines is cluster.x-k8s.io/v1beta1 machines.
	ClusterAPIMachines = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}
)

// Machines is the MachineStore of cluster-api Machines of one namespace,
// through the dynamic client. A machine's other name is the node it
// became (status.nodeRef.name in both flavours).
type Machines struct {
	// Client is the dynamic client.
	Client dynamic.Interface
	// Resource is the Machines' resource: OpenShiftMachines,
	// ClusterAPIMachines or another with the same fields.
	Resource schema.GroupVersionResource
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
	case m.Resource.Resource == "" || m.Resource.Version == "":
		return errors.New("no resource given")
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
	opts := metav1.ListOptions{LabelSelector: m.Selector, Limit: listPageSize}
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, &Error{Kind: KindMachine, Namespace: m.Namespace, Op: OpList, Err: errTooMany}
		}
		list, err := m.Client.Resource(m.Resource).Namespace(m.Namespace).List(ctx, opts)
		if err != nil {
			return nil, &Error{Kind: KindMachine, Namespace: m.Namespace, Op: OpList, Err: err}
		}
		for i := range list.Items {
			mc, err := machine(&list.Items[i], path)
			if err != nil {
				return nil, err
			}
			out = append(out, mc)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
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
	fail := func(err error) error {
		return &Error{Kind: KindMachine, Namespace: m.Namespace, Name: name, Op: OpLabel, Field: labelField(key), Err: err}
	}
	if err := m.check(); err != nil {
		return fail(err)
	}
	_, err := m.Client.Resource(m.Resource).Namespace(m.Namespace).Patch(ctx, name, types.MergePatchType, LabelPatch(key, add), metav1.PatchOptions{})
	if err != nil {
		return fail(err)
	}
	return nil
}

var (
	_ MachineStore = (*Nodes)(nil)
	_ MachineStore = (*Machines)(nil)
)
