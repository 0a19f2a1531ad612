package rebootkube

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/reboot"
)

// Client is the client's side of the reboot interface, for clusters whose
// hosts a baremetal-operator manages: it writes and removes reboot
// annotations and reads the status the operator keeps, and never switches
// a host itself. A keyed annotation (reboot.metal3.io/KEY) holds the host
// off until its client removes it; that is how a fencing client keeps a
// node off while its workloads move.
type Client struct {
	// Hosts reads and patches the hosts (NewMetal3 for BareMetalHosts).
	Hosts *Hosts
}

// RequestReboot writes the keyed annotation reboot.metal3.io/key (the
// plain one when key is empty) with mode: the operator switches the host
// off (hard: at once; soft: after a graceful shutdown) and, once every
// keyed annotation is gone, on again. Writing it again is harmless.
func (c *Client) RequestReboot(ctx context.Context, namespace, name, key string, mode reboot.Mode) error {
	ann := reboot.Annotation
	if key != "" {
		ann = reboot.KeyedAnnotation(key)
	}
	value, err := json.Marshal(map[string]string{"mode": mode.String()})
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{ann: string(value)}}})
	if err != nil {
		return err
	}
	if err := c.Hosts.mergePatch(ctx, namespace, name, patch); err != nil {
		return &Error{Namespace: namespace, Name: name, Op: OpRequest, Field: annotationField(ann), Err: err}
	}
	return nil
}

// ReleaseReboot removes the keyed annotation reboot.metal3.io/key: once no
// keyed annotation is left, the operator switches the host on again.
// Removing one that is gone is harmless.
func (c *Client) ReleaseReboot(ctx context.Context, namespace, name, key string) error {
	if key == "" {
		return fmt.Errorf("rebootkube: ReleaseReboot needs the key of a keyed annotation (the operator removes the plain one)")
	}
	ann := reboot.KeyedAnnotation(key)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{ann: nil}}})
	if err != nil {
		return err
	}
	if err := c.Hosts.mergePatch(ctx, namespace, name, patch); err != nil {
		return &Error{Namespace: namespace, Name: name, Op: OpRemoveAnnotations, Field: annotationField(ann), Err: err}
	}
	return nil
}

// Power returns the host's power as the operator reports it (the status's
// poweredOn): StateUnknown when the status does not say, or when the
// operator marks its last power operation failed; a host whose reboot is
// pending (pendingRebootSince after lastPoweredOn) and that is reported off
// is off.
func (c *Client) Power(ctx context.Context, namespace, name string) (fence.State, *Host, error) {
	h, err := c.Hosts.Get(ctx, namespace, name)
	if err != nil {
		return fence.StateUnknown, nil, err
	}
	switch {
	case !h.PoweredOnRecorded || h.LastPowerFailed:
		return fence.StateUnknown, h, nil
	case h.PoweredOn:
		return fence.StateOn, h, nil
	}
	return fence.StateOff, h, nil
}
