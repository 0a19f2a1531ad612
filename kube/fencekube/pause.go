package fencekube

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fencekit/fencekit/policy"
)

// A pause request is a ConfigMap of the controller's namespace named
// fence-pause-NAME: its data key reason says why, and its annotation
// fencekit.io/paused-by who asked (deploy/pause-policy.yaml, a
// ValidatingAdmissionPolicy, refuses one without a reason, or whose
// annotation is not the requester's user name). Every fencing is held
// while one exists (policy.Paused); deleting it ends the pause.
const (
	PausePrefix        = "fence-pause-"
	PauseReasonKey     = "reason"
	PausedByAnnotation = "fencekit.io/paused-by"
)

// Pauses returns the pause requests of the namespace: from the informer
// once it has synced, else through the ConfigSource's client. It is a
// policy.PauseSource.
func (c *ConfigSource) Pauses(ctx context.Context) ([]policy.Pause, error) {
	var cms []*corev1.ConfigMap
	if inf := c.src.informer(); inf != nil {
		for _, obj := range inf.List() {
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Namespace == c.namespace && strings.HasPrefix(cm.Name, PausePrefix) {
				cms = append(cms, cm)
			}
		}
	} else {
		err := listConfigMaps(ctx, c.client, c.namespace, func(cm *corev1.ConfigMap) {
			if strings.HasPrefix(cm.Name, PausePrefix) {
				cms = append(cms, cm)
			}
		})
		if err != nil {
			return nil, &Error{Kind: "ConfigMap", Name: c.namespace + "/" + PausePrefix + "*", Op: OpConfig, Err: err}
		}
	}
	out := make([]policy.Pause, 0, len(cms))
	for _, cm := range cms {
		out = append(out, policy.Pause{Name: strings.TrimPrefix(cm.Name, PausePrefix), By: cm.Annotations[PausedByAnnotation],
			Reason: strings.TrimSpace(cm.Data[PauseReasonKey]), Since: cm.CreationTimestamp.Time})
	}
	return out, nil
}
