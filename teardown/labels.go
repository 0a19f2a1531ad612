package teardown

import (
	"slices"
	"strings"
)

// DecommissionLabel, set to DecommissionValue, asks the node's kubelet to
// shut down (the label of Airship's teardown design, with its spelling): a
// DaemonSet selecting it runs "systemctl disable kubelet && systemctl stop
// kubelet".
const (
	DecommissionLabel = "promenade-decomission"
	DecommissionValue = "enabled"
)

// kubeletLabels are the well-known labels the kubelet (or its cloud
// provider) sets on its own Node; kubeletPrefixes are their families.
var (
	kubeletLabels = []string{
		"kubernetes.io/hostname",
		"kubernetes.io/os",
		"kubernetes.io/arch",
		"node.kubernetes.io/instance-type",
	}
	kubeletPrefixes = []string{
		"beta.kubernetes.io/",
		"topology.kubernetes.io/",
		"failure-domain.beta.kubernetes.io/",
	}
)

// KubeletLabel reports whether key is one of the well-known labels the
// kubelet sets on its own Node: kubernetes.io/hostname, kubernetes.io/os,
// kubernetes.io/arch, node.kubernetes.io/instance-type, and every key under
// beta.kubernetes.io/, topology.kubernetes.io/ and
// failure-domain.beta.kubernetes.io/. These are not "labels that have been
// added to the node" (the teardown design's words) and clear-labels keeps
// them: the kubelet would set them again anyway.
func KubeletLabel(key string) bool {
	if slices.Contains(kubeletLabels, key) {
		return true
	}
	for _, p := range kubeletPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// ClearableLabels returns, sorted, the keys of labels that the clear-labels
// step removes. When explicit is empty: every key but the kubelet's own
// (KubeletLabel) and DecommissionLabel, which the shutdown-kubelet step
// owns. When explicit is not empty: the keys of explicit that labels holds
// (the caller named them, so even DecommissionLabel).
func ClearableLabels(labels map[string]string, explicit []string) []string {
	var out []string
	if len(explicit) > 0 {
		for _, k := range explicit {
			if _, ok := labels[k]; ok && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	} else {
		for k := range labels {
			if !KubeletLabel(k) && k != DecommissionLabel {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// LeftoverLabels returns, sorted, the labels that make remove-from-cluster
// refuse the node with a 409 Conflict: those ClearableLabels would remove,
// except DecommissionLabel set to DecommissionValue, plus DecommissionLabel
// set to any other value. This is the teardown design's "no labels other
// than promenade-decomission: enabled", read with the same rule as
// clear-labels so that a node clear-labels has cleared always passes: the
// kubelet's own labels are not counted.
func LeftoverLabels(labels map[string]string, explicit []string) []string {
	var out []string
	for _, k := range ClearableLabels(labels, explicit) {
		if k == DecommissionLabel && labels[k] == DecommissionValue {
			continue
		}
		out = append(out, k)
	}
	if v, ok := labels[DecommissionLabel]; ok && v != DecommissionValue && !slices.Contains(out, DecommissionLabel) {
		out = append(out, DecommissionLabel)
		slices.Sort(out)
	}
	return out
}
