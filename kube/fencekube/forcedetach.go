package fencekube

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ForceDetach says whether kube-controller-manager detaches a volume,
// without proof, from a node that has been unhealthy for 6 minutes once the
// volume's pod is gone (its attach-detach controller's maxWaitForUnmount,
// unless it runs with --disable-force-detach-on-timeout). When it does, a
// pod deleted by hand (kubectl delete pod --force) or by another tool while
// fencekit cannot fence its node has its ReadWriteOnce volume attached
// elsewhere 6 minutes later, with the node perhaps still writing to it:
// "volumes detached only after a verified off" then does not hold.
type ForceDetach string

// The answers of DetectForceDetach.
const (
	// ForceDetachEnabled: the controller manager force-detaches (its
	// default).
	ForceDetachEnabled ForceDetach = "enabled"
	// ForceDetachDisabled: it runs with --disable-force-detach-on-timeout:
	// a volume stays attached to an unhealthy node until the node is
	// fenced (the out-of-service taint) or comes back.
	ForceDetachDisabled ForceDetach = "disabled"
	// ForceDetachUnknown: this controller cannot tell (a managed control
	// plane, whose controller manager runs outside the cluster): declare it
	// (cmd/fencekit-controller's --force-detach-on-timeout).
	ForceDetachUnknown ForceDetach = "unknown"
)

// ParseForceDetach parses a declared setting: enabled or disabled ("auto"
// and "unknown" are not declarations).
func ParseForceDetach(s string) (ForceDetach, error) {
	switch ForceDetach(s) {
	case ForceDetachEnabled, ForceDetachDisabled:
		return ForceDetach(s), nil
	}
	return "", fmt.Errorf("%q: want enabled or disabled", s)
}

// ControllerManagerSelector selects the controller manager's pods in
// kube-system: the mirror pods of the static pods kubeadm and most
// installers run it as.
const ControllerManagerSelector = "component=kube-controller-manager"

// controllerManager is ControllerManagerSelector as a list option.
var controllerManager = client.MatchingLabels{"component": "kube-controller-manager"}

// DetectForceDetach reads the command lines of the controller manager's
// pods in kube-system (ControllerManagerSelector) for
// --disable-force-detach-on-timeout, through c: a client that reads the
// API server (client.New; a manager's cache would have to hold
// kube-system's pods). It returns what it found and how it knows, for the
// log; ForceDetachUnknown when no such pod is visible. When several pods
// disagree (a change rolling out), the answer is ForceDetachEnabled: any
// of them may lead.
//
// RBAC: the controller manager's pods listed in kube-system.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
func DetectForceDetach(ctx context.Context, c client.Reader) (ForceDetach, string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace("kube-system"), controllerManager); err != nil {
		return ForceDetachUnknown, "", fmt.Errorf("reading the kube-controller-manager pods of kube-system (%s): %w", ControllerManagerSelector, err)
	}
	if len(pods.Items) == 0 {
		return ForceDetachUnknown, "no pod " + ControllerManagerSelector + " in kube-system (a control plane outside the cluster?)", nil
	}
	answer, how := ForceDetachDisabled, ""
	for _, p := range pods.Items {
		found := false
		for _, c := range p.Spec.Containers {
			if d, ok := disableFlag(append(append([]string{}, c.Command...), c.Args...)); ok {
				found = true
				if !d {
					answer, how = ForceDetachEnabled, "pod kube-system/"+p.Name+" runs with --disable-force-detach-on-timeout=false"
				}
			}
		}
		if !found {
			answer, how = ForceDetachEnabled, "pod kube-system/"+p.Name+" runs without --disable-force-detach-on-timeout (the default force-detaches)"
		}
	}
	if answer == ForceDetachDisabled {
		how = fmt.Sprintf("every kube-controller-manager pod of kube-system (%d) runs with --disable-force-detach-on-timeout", len(pods.Items))
	}
	return answer, how, nil
}

// disableFlag finds --disable-force-detach-on-timeout in a command line and
// its value (a bare flag is true, as Go's boolean flags read it).
func disableFlag(args []string) (disable, found bool) {
	const flag = "--disable-force-detach-on-timeout"
	for _, a := range args {
		for _, f := range strings.Fields(a) { // a shell's "-c" line, too
			if f == flag {
				disable, found = true, true
				continue
			}
			if v, ok := strings.CutPrefix(f, flag+"="); ok {
				b, err := strconv.ParseBool(strings.Trim(v, `"'`))
				disable, found = err == nil && b, true
			}
		}
	}
	return disable, found
}
