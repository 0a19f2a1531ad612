// Package bmhfence fences a node through the baremetal-operator of a metal3
// cluster: a fence driver ("bmh") whose device is a BareMetalHost, driven
// through the reboot interface the operator serves (the metal3 reboot API
// design, whose stated purpose is "a non-destructive way to fence a
// Kubernetes node"):
//
//   - off writes the keyed annotation reboot.metal3.io/KEY with
//     {"mode":"hard"}: the operator switches the host off at once and holds
//     it off while the annotation stands;
//   - status is off only when the operator holds the host off for this
//     driver: the annotation stands, the operator has taken it
//     (status.provisioning.pendingRebootSince is set) and reports the host
//     off (status.poweredOn false). A host reported off that no annotation
//     of this key holds counts as on until this device released it:
//     nothing keeps it off (the operator may switch it on whenever its spec
//     says so), and the status may be older than a power change the
//     operator has not seen yet; so an off always writes the annotation and
//     waits for the operator. The status is unknown when it does not say,
//     or records a failed power operation;
//   - on removes the annotation: once no keyed annotation is left, the
//     operator switches the host on, and the status says on once it
//     reports it on;
//   - a host whose spec.disablePowerOff is true is never counted off: its
//     operator serves the annotation with a reboot, not a held off, so a
//     host seen off for a moment is rebooting and will run again. Status
//     and off fail at once (ErrPowerOffDisabled, nothing written), and the
//     node's next level (storage isolation, the node agent, a person's
//     confirmation) is tried.
//
// So a metal3 cluster fences through its operator with the same
// verification (an off counts only once the operator reports the host
// off), fence levels, policy and pod treatment as with any device, and the
// operator keeps the only connection to the BMC. The driver never talks to
// the BMC itself.
//
// The driver needs a client of the cluster, so it is not registered at
// init: build it with Driver and register it in the registry the fence
// configuration is read with:
//
//	reg.Register(bmhfence.Driver(rebootkube.NewMetal3(mgr.GetClient())))
//
// A method's address is bmh://NAMESPACE/NAME, or bmh://NAMESPACE with the
// host's name as its plug.
package bmhfence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/kube/rebootkube"
	"github.com/fencekit/fencekit/reboot"
)

// DefaultKey is the key of the reboot annotation the driver writes when
// the method names none: reboot.metal3.io/fencekit.
const DefaultKey = "fencekit"

// Name is the driver's name and address scheme.
const Name = "bmh"

// RBAC, for methods of driver bmh (bmh://NAMESPACE/NAME): the
// BareMetalHost read for the power its baremetal-operator reports, and its
// keyed reboot annotation written and removed (a merge patch). Remove the
// rule when no method names bmh.
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;patch

// Driver returns the "bmh" driver over hosts (rebootkube.NewMetal3 for
// metal3's BareMetalHosts over a controller-runtime client, or Hosts of
// another kind with a Mapping). Its parameters beyond the common ones: reboot_key, the key of
// the reboot annotation (default DefaultKey), so that several fencing
// clients hold a host each with its own; plug, the host's name when the
// address names only the namespace.
func Driver(hosts *rebootkube.Hosts) fence.Driver {
	return fence.Driver{
		Name:        Name,
		Description: "A metal3 BareMetalHost, fenced through its baremetal-operator: off holds the host off with a keyed reboot annotation in hard mode, on removes it, status is the power the operator reports",
		// Every call is one request to the API server.
		IOTimeout: 10 * time.Second,
		Params: []fence.ParamSpec{
			{Name: "reboot_key", Description: "Key of the reboot annotation (reboot.metal3.io/KEY) the driver writes and removes", Type: "string", Default: DefaultKey},
		},
		Check: func(a fence.Address, p fence.Params) error {
			_, err := targetOf(a, p)
			return err
		},
		Open: func(_ context.Context, o fence.OpenOptions) (fence.Device, error) {
			t, err := targetOf(o.Address, o.Params)
			if err != nil {
				return nil, err
			}
			if hosts == nil {
				return nil, fmt.Errorf("%w: the bmh driver was built without a client of the cluster", fence.ErrConfig)
			}
			return &Device{client: &rebootkube.Client{Hosts: hosts}, target: t}, nil
		},
	}
}

// target is the host a method names.
type target struct {
	namespace, name, key string
}

// targetOf reads the namespace, the name and the key from a method's
// address and parameters.
func targetOf(a fence.Address, p fence.Params) (target, error) {
	t := target{namespace: a.Host, name: strings.Trim(a.Path, "/"), key: DefaultKey}
	if a.Port != 0 || a.Transport != "" || len(a.Query) > 0 {
		return t, &fence.ParamError{Key: "address", Value: "bmh://" + a.Host, Reason: "want bmh://NAMESPACE/NAME: no port, transport or query"}
	}
	if len(validation.IsDNS1123Label(t.namespace)) > 0 {
		return t, &fence.ParamError{Key: "address", Value: t.namespace, Reason: "the namespace is not a DNS label"}
	}
	plug, _ := p.Get("plug")
	switch {
	case t.name == "" && plug == "":
		return t, &fence.ParamError{Key: "plug", Reason: "no host: give bmh://NAMESPACE/NAME, or the host's name as plug"}
	case t.name == "":
		t.name = plug
	case plug != "" && plug != t.name:
		return t, &fence.ParamError{Key: "plug", Value: plug, Reason: "differs from the host the address names (" + t.name + ")"}
	}
	if len(validation.IsDNS1123Subdomain(t.name)) > 0 {
		return t, &fence.ParamError{Key: "address", Value: t.name, Reason: "the host's name is not a DNS subdomain"}
	}
	if k, ok := p.Get("reboot_key"); ok && k != "" {
		t.key = k
	}
	if len(validation.IsQualifiedName(reboot.KeyedAnnotation(t.key))) > 0 || strings.Contains(t.key, "/") {
		return t, &fence.ParamError{Key: "reboot_key", Value: t.key, Reason: "not the name part of an annotation key (1 to 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit)"}
	}
	return t, nil
}

// Device is one BareMetalHost as a fence device.
type Device struct {
	client *rebootkube.Client
	target target

	mu       sync.Mutex
	released map[string]bool // hosts this device released (Set on), by name
}

// name returns the host's name: the address's, or the plug.
func (d *Device) name(plug string) string {
	if d.target.name != "" {
		return d.target.name
	}
	return plug
}

// Status returns off when the operator holds the host off for this
// driver (see the package documentation), on when no annotation of this
// key holds it or the operator reports it on, and unknown when the
// operator's status does not say.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	st, h, err := d.client.Power(ctx, d.target.namespace, d.name(plug))
	if err != nil {
		return fence.StateUnknown, d.wrap("read BareMetalHost", plug, err)
	}
	if err := unmanaged(h); err != nil {
		return fence.StateUnknown, d.wrap("read BareMetalHost", plug, err)
	}
	_, held := h.Annotations[reboot.KeyedAnnotation(d.target.key)]
	d.mu.Lock()
	released := d.released[d.name(plug)]
	d.mu.Unlock()
	switch {
	case !held && !released:
		return fence.StateOn, nil
	case st == fence.StateOff && !h.PendingRebootSince.After(h.LastPoweredOn):
		// The operator has not taken the annotation since the host was
		// last powered on (pendingRebootSince stays set after a reboot
		// ends, older than lastPoweredOn): its off may be older than the
		// request, or not its own.
		return fence.StateOn, nil
	}
	return st, nil
}

// The annotations with which a user takes a host from its operator: a
// paused host is not reconciled, a detached one not power managed.
const (
	AnnotationPaused   = "baremetalhost.metal3.io/paused"
	AnnotationDetached = "baremetalhost.metal3.io/detached"
)

// ErrPowerOffDisabled means the host's spec.disablePowerOff is true: its
// operator never holds it off, so no off of it can be proven.
var ErrPowerOffDisabled = errors.New("the host may not be powered off (spec.disablePowerOff): its operator reboots it instead, so no off can be held or proven")

// ErrNotManaged means the operator does not manage the host's power (it is
// paused or detached, or the operator records a power management error):
// an annotation would never be served, so the device fails at once, not
// done, and the next level is tried without waiting out the power timeout.
var ErrNotManaged = errors.New("the baremetal-operator does not manage the host's power")

// unmanaged returns an error wrapping ErrNotManaged, fence.ErrUnreachable
// and fence.NotDone when the operator does not manage the host's power.
func unmanaged(h *rebootkube.Host) error {
	why := ""
	switch {
	case hasKey(h.Annotations, AnnotationDetached):
		why = "it is detached (" + AnnotationDetached + ")"
	case hasKey(h.Annotations, AnnotationPaused):
		why = "it is paused (" + AnnotationPaused + ")"
	case h.LastPowerFailed:
		why = "the operator records a power management error"
	case h.DisablePowerOff:
		// Nothing was switched, nor will be: the level fails at once,
		// and the node's next level is tried.
		return fence.NotDone(fmt.Errorf("%w: fence the node with another level (storage isolation, the node agent, a person's confirmation): %w",
			ErrPowerOffDisabled, fence.ErrUnreachable))
	default:
		return nil
	}
	return fence.NotDone(fmt.Errorf("%w: %s: %w", ErrNotManaged, why, fence.ErrUnreachable))
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// Set asks the operator to switch the host off (the keyed reboot
// annotation in hard mode) or lets it switch the host on (the annotation
// removed). The operator acts later; Status tells when it has.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	name := d.name(plug)
	switch s {
	case fence.StateOff:
		// Read first: the annotation is never written on a host that may
		// not be powered off, whose operator would reboot it.
		_, h, err := d.client.Power(ctx, d.target.namespace, name)
		if err != nil {
			return d.wrap("read BareMetalHost", plug, err)
		}
		if h.DisablePowerOff {
			return d.wrap("switch off BareMetalHost", plug, unmanaged(h))
		}
		d.mark(name, false)
		return d.wrap("write the reboot annotation of BareMetalHost", plug,
			d.client.RequestReboot(ctx, d.target.namespace, name, d.target.key, reboot.Hard))
	case fence.StateOn:
		err := d.client.ReleaseReboot(ctx, d.target.namespace, name, d.target.key)
		if err == nil {
			d.mark(name, true)
		}
		return d.wrap("remove the reboot annotation of BareMetalHost", plug, err)
	}
	return fmt.Errorf("bmh: cannot set state %v", s)
}

// mark records whether this device released the host.
func (d *Device) mark(name string, released bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released == nil {
		d.released = map[string]bool{}
	}
	d.released[name] = released
}

// wrap names the host in an error; a host that does not exist is a
// configuration error, not a transient one.
func (d *Device) wrap(what, plug string, err error) error {
	if err == nil {
		return nil
	}
	ref := d.target.namespace + "/" + d.name(plug)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s: %w: %w", what, ref, fence.ErrConfig, err)
	}
	return fmt.Errorf("%s %s: %w", what, ref, err)
}
