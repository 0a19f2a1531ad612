package rebootkube

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fencekit/fencekit/internal/kubeobj"
	"github.com/fencekit/fencekit/reboot"
)

// Path is where a field lives in an object's JSON form: the member names
// from the root, such as Path{"status", "poweredOn"}.
type Path []string

// ParsePath splits a dotted path such as "status.provisioning.state" into
// a Path. "" is the empty Path.
func ParsePath(s string) Path {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// String returns the path with its names joined by dots.
func (p Path) String() string { return strings.Join(p, ".") }

// Mapping says where the fields of the reboot interface live in an object,
// and how to read them. Paths name members of the object's JSON form. The
// annotations are always the object's metadata.annotations.
type Mapping struct {
	// PoweredOn is the boolean record of the host's power
	// (Status.PoweredOn), which the Reconciler writes; empty when the type
	// has no such field. The power state itself is read from the device.
	PoweredOn Path
	// Online is the boolean Spec.Online: whether the host should be on. An
	// absent field is false; an empty Path means the host is always meant
	// to be on.
	Online Path
	// ProvisioningState is the string field whose value Provisioning maps
	// to a reboot.Provisioning; empty when the type has none (Provisioning
	// is then called with "").
	ProvisioningState Path
	// Provisioning maps the value of ProvisioningState ("" when absent) to
	// the reboot state machine's provisioning states. Required.
	Provisioning func(state string) reboot.Provisioning
	// PendingRebootSince is the timestamp field (RFC 3339, as a
	// metav1.Time) that records when a reboot was noted. Required.
	PendingRebootSince Path
	// LastPoweredOn is the timestamp field (RFC 3339, as a metav1.Time)
	// that records the last verified power on. Required.
	LastPoweredOn Path
	// ErrorType is the string field that marks a failed power operation
	// when it holds PowerErrorType; empty when the type has none (the
	// failure mark is then neither read nor written). Other values of the
	// field are other kinds of error: they are read as "no power failure"
	// and never cleared, but a power failure replaces them, as the latest
	// error does in a BareMetalHost's single error field.
	ErrorType Path
	// PowerErrorType is the value of ErrorType that marks a failed power
	// operation. Required with ErrorType.
	PowerErrorType string
	// ErrorMessage is the string field written with the power failure's
	// message beside ErrorType, and cleared with it; optional.
	ErrorMessage Path
	// Force is a boolean field that makes the reboot annotations of a host
	// that is not provisioned count (reboot.Input.Force); optional.
	Force Path
	// DisablePowerOff is the boolean field that forbids switching the host
	// off (metal3's spec.disablePowerOff: its operator then serves a reboot
	// annotation with a reboot, never a held off); optional, an absent
	// field is false.
	DisablePowerOff Path
}

// BareMetalHostKind is metal3's BareMetalHost kind.
var BareMetalHostKind = kubeobj.BareMetalHost

// Metal3PowerErrorType is the errorType of a BareMetalHost whose last
// power operation failed.
const Metal3PowerErrorType = "power management error"

// Metal3Mapping returns the mapping of metal3's BareMetalHost
// (metal3.io/v1alpha1), with the two timestamps of the reboot interface in
// the provisioning section of the status, as the design places them:
//
//	PoweredOn           status.poweredOn
//	Online              spec.online
//	ProvisioningState   status.provisioning.state (see Metal3Provisioning)
//	PendingRebootSince  status.provisioning.pendingRebootSince
//	LastPoweredOn       status.provisioning.lastPoweredOn
//	ErrorType           status.errorType, "power management error"
//	ErrorMessage        status.errorMessage
//	Force               none
//	DisablePowerOff     spec.disablePowerOff
//
// Every field it writes is in the status, which a BareMetalHost writes
// through its status subresource.
func Metal3Mapping() Mapping {
	return Mapping{
		PoweredOn:          Path{"status", "poweredOn"},
		Online:             Path{"spec", "online"},
		ProvisioningState:  Path{"status", "provisioning", "state"},
		Provisioning:       Metal3Provisioning,
		PendingRebootSince: Path{"status", "provisioning", "pendingRebootSince"},
		LastPoweredOn:      Path{"status", "provisioning", "lastPoweredOn"},
		ErrorType:          Path{"status", "errorType"},
		PowerErrorType:     Metal3PowerErrorType,
		ErrorMessage:       Path{"status", "errorMessage"},
		DisablePowerOff:    Path{"spec", "disablePowerOff"},
	}
}

// Metal3Provisioning maps a BareMetalHost's provisioning state: "provisioned"
// and "externally provisioned" are reboot.Provisioned, "deprovisioning" is
// reboot.Deprovisioning, every other state (registering, inspecting,
// available, provisioning, deleting, ...) is reboot.NotProvisioned.
func Metal3Provisioning(state string) reboot.Provisioning {
	switch state {
	case "provisioned", "externally provisioned":
		return reboot.Provisioned
	case "deprovisioning":
		return reboot.Deprovisioning
	}
	return reboot.NotProvisioned
}

// Validate checks that the mapping names every required field. When
// statusOnly is true (the fields are written through a status subresource)
// it also checks that every field the Reconciler writes is under "status".
func (m *Mapping) Validate(statusOnly bool) error {
	var errs []error
	if m.Provisioning == nil {
		errs = append(errs, errors.New("Provisioning is required"))
	}
	if len(m.PendingRebootSince) == 0 {
		errs = append(errs, errors.New("PendingRebootSince is required"))
	}
	if len(m.LastPoweredOn) == 0 {
		errs = append(errs, errors.New("LastPoweredOn is required"))
	}
	if len(m.ErrorType) > 0 && m.PowerErrorType == "" {
		errs = append(errs, errors.New("PowerErrorType is required with ErrorType"))
	}
	if len(m.ErrorMessage) > 0 && len(m.ErrorType) == 0 {
		errs = append(errs, errors.New("ErrorMessage needs ErrorType"))
	}
	for _, f := range []struct {
		name string
		p    Path
	}{
		{"PoweredOn", m.PoweredOn}, {"Online", m.Online}, {"ProvisioningState", m.ProvisioningState},
		{"PendingRebootSince", m.PendingRebootSince}, {"LastPoweredOn", m.LastPoweredOn},
		{"ErrorType", m.ErrorType}, {"ErrorMessage", m.ErrorMessage}, {"Force", m.Force},
		{"DisablePowerOff", m.DisablePowerOff},
	} {
		if slices.Contains(f.p, "") {
			errs = append(errs, fmt.Errorf("%s: path %q has an empty name", f.name, f.p))
		}
		if len(f.p) > 0 && f.p[0] == "metadata" {
			errs = append(errs, fmt.Errorf("%s: path %q is in metadata", f.name, f.p))
		}
	}
	if statusOnly {
		for _, f := range []struct {
			name string
			p    Path
		}{
			{"PoweredOn", m.PoweredOn}, {"PendingRebootSince", m.PendingRebootSince},
			{"LastPoweredOn", m.LastPoweredOn}, {"ErrorType", m.ErrorType}, {"ErrorMessage", m.ErrorMessage},
		} {
			if len(f.p) > 0 && (f.p[0] != "status" || len(f.p) < 2) {
				errs = append(errs, fmt.Errorf("%s: path %q is not in the status, which a status subresource writes", f.name, f.p))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("rebootkube: invalid mapping: %w", errors.Join(errs...))
	}
	return nil
}

// Host is one object as the Reconciler sees it: its identity, its
// annotations and its reboot fields, read with a Mapping.
type Host struct {
	// Namespace and Name name the object.
	Namespace, Name string
	// ResourceVersion is the version read, the precondition of the writes
	// that depend on it.
	ResourceVersion string
	// Annotations are all the object's annotations.
	Annotations map[string]string
	// PoweredOn is the recorded power state (Mapping.PoweredOn), and
	// PoweredOnRecorded tells whether the field is there at all.
	PoweredOn, PoweredOnRecorded bool
	// Online is Spec.Online.
	Online bool
	// ProvisioningState is the raw provisioning state, and Provisioning
	// what the mapping makes of it.
	ProvisioningState string
	// Provisioning is the reboot state machine's provisioning state.
	Provisioning reboot.Provisioning
	// PendingRebootSince and LastPoweredOn are the two timestamps; the zero
	// time when unset.
	PendingRebootSince, LastPoweredOn time.Time
	// LastPowerFailed is true when the power failure mark is set.
	LastPowerFailed bool
	// Force is the mapping's force flag.
	Force bool
	// DisablePowerOff is true when the host must not be switched off
	// (Mapping.DisablePowerOff).
	DisablePowerOff bool
	// Object is the object as read, in its JSON form (for a Typed store,
	// converted). It must not be changed.
	Object *unstructured.Unstructured
}

// Input returns the reboot.Input of the host at time now, with the
// recorded power state; the Reconciler replaces PoweredOn with the
// device's. Precision is time.Second, the precision of a metav1.Time.
func (h *Host) Input(now time.Time) reboot.Input {
	return reboot.Input{
		Annotations:        h.Annotations,
		PoweredOn:          h.PoweredOn,
		Online:             h.Online,
		Provisioning:       h.Provisioning,
		PendingRebootSince: h.PendingRebootSince,
		LastPoweredOn:      h.LastPoweredOn,
		LastPowerFailed:    h.LastPowerFailed,
		Force:              h.Force,
		Now:                now,
		Precision:          time.Second,
	}
}

// ReadHost reads a host from an object with a mapping. A field of the
// wrong type, or a timestamp that is not RFC 3339, is an *Error naming the
// field.
func ReadHost(obj *unstructured.Unstructured, m *Mapping) (*Host, error) {
	h := &Host{
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		ResourceVersion: obj.GetResourceVersion(),
		Annotations:     obj.GetAnnotations(),
		Object:          obj,
		Online:          true,
	}
	fail := func(p Path, err error) (*Host, error) {
		return nil, &Error{Namespace: h.Namespace, Name: h.Name, Op: OpRead, Field: p.String(), Err: err}
	}
	var err error
	if len(m.PoweredOn) > 0 {
		if h.PoweredOn, h.PoweredOnRecorded, err = readBool(obj, m.PoweredOn); err != nil {
			return fail(m.PoweredOn, err)
		}
	}
	if len(m.Online) > 0 {
		if h.Online, _, err = readBool(obj, m.Online); err != nil {
			return fail(m.Online, err)
		}
	}
	if len(m.ProvisioningState) > 0 {
		if h.ProvisioningState, _, err = readString(obj, m.ProvisioningState); err != nil {
			return fail(m.ProvisioningState, err)
		}
	}
	if m.Provisioning == nil {
		return fail(nil, errors.New("the mapping has no Provisioning function"))
	}
	h.Provisioning = m.Provisioning(h.ProvisioningState)
	if h.PendingRebootSince, err = readTime(obj, m.PendingRebootSince); err != nil {
		return fail(m.PendingRebootSince, err)
	}
	if h.LastPoweredOn, err = readTime(obj, m.LastPoweredOn); err != nil {
		return fail(m.LastPoweredOn, err)
	}
	if len(m.ErrorType) > 0 {
		s, _, err := readString(obj, m.ErrorType)
		if err != nil {
			return fail(m.ErrorType, err)
		}
		h.LastPowerFailed = s != "" && s == m.PowerErrorType
	}
	if len(m.Force) > 0 {
		if h.Force, _, err = readBool(obj, m.Force); err != nil {
			return fail(m.Force, err)
		}
	}
	if len(m.DisablePowerOff) > 0 {
		if h.DisablePowerOff, _, err = readBool(obj, m.DisablePowerOff); err != nil {
			return fail(m.DisablePowerOff, err)
		}
	}
	return h, nil
}

// lookup returns the value at p, and whether it is there (a JSON null is
// not).
func lookup(obj *unstructured.Unstructured, p Path) (any, bool, error) {
	var v any = obj.Object
	for i, name := range p {
		m, ok := v.(map[string]any)
		if !ok {
			if v == nil {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("%s is a %s, not an object", Path(p[:i]), jsonType(v))
		}
		v, ok = m[name]
		if !ok {
			return nil, false, nil
		}
	}
	return v, v != nil, nil
}

func readBool(obj *unstructured.Unstructured, p Path) (value, present bool, err error) {
	v, ok, err := lookup(obj, p)
	if err != nil || !ok {
		return false, false, err
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, false, fmt.Errorf("a %s, not a boolean", jsonType(v))
	}
	return b, true, nil
}

func readString(obj *unstructured.Unstructured, p Path) (value string, present bool, err error) {
	v, ok, err := lookup(obj, p)
	if err != nil || !ok {
		return "", false, err
	}
	s, isString := v.(string)
	if !isString {
		return "", false, fmt.Errorf("a %s, not a string", jsonType(v))
	}
	return s, true, nil
}

// readTime reads a timestamp as metav1.Time does: RFC 3339, "" and absent
// meaning unset.
func readTime(obj *unstructured.Unstructured, p Path) (time.Time, error) {
	s, _, err := readString(obj, p)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an RFC 3339 time (%q)", clip(s))
	}
	return t, nil
}

// formatTime writes a timestamp as metav1.Time does.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "number"
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	const limit = 40
	if len(s) > limit {
		return strings.ToValidUTF8(s[:limit], "") + "..."
	}
	return s
}
