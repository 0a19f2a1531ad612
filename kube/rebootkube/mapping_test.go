package rebootkube_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/kube/rebootkube"
	"github.com/fencekit/fencekit/reboot"
)

func TestReadHostMetal3(t *testing.T) {
	h := host{
		ns: "metal3", name: "host-0", online: true, state: "externally provisioned", poweredOn: ptr(true),
		annotations: map[string]string{reboot.Annotation: `{"mode":"hard"}`, "other": "x"},
		pending:     "2024-05-01T12:00:01Z", lastOn: "2024-05-01T11:00:00Z", errorType: rebootkube.Metal3PowerErrorType,
	}
	m := rebootkube.Metal3Mapping()
	got, err := rebootkube.ReadHost(h.full(), &m)
	require.NoError(t, err)
	assert.Equal(t, "metal3", got.Namespace)
	assert.Equal(t, "host-0", got.Name)
	assert.Equal(t, "1", got.ResourceVersion)
	assert.Equal(t, h.annotations, got.Annotations)
	assert.True(t, got.PoweredOn)
	assert.True(t, got.PoweredOnRecorded)
	assert.True(t, got.Online)
	assert.Equal(t, reboot.Provisioned, got.Provisioning)
	assert.Equal(t, time.Date(2024, 5, 1, 12, 0, 1, 0, time.UTC), got.PendingRebootSince.UTC())
	assert.Equal(t, time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC), got.LastPoweredOn.UTC())
	assert.True(t, got.LastPowerFailed)
	assert.False(t, got.Force)

	in := got.Input(time.Unix(100, 0))
	assert.Equal(t, time.Second, in.Precision)
	assert.Equal(t, time.Unix(100, 0), in.Now)
	assert.True(t, in.LastPowerFailed)
}

func TestReadHostDefaultsWhenFieldsAreAbsent(t *testing.T) {
	h := host{ns: "ns", name: "h"}
	obj, _ := h.object()
	m := rebootkube.Metal3Mapping()
	got, err := rebootkube.ReadHost(obj, &m)
	require.NoError(t, err)
	assert.False(t, got.PoweredOnRecorded)
	assert.False(t, got.Online)
	assert.Equal(t, reboot.NotProvisioned, got.Provisioning)
	assert.True(t, got.PendingRebootSince.IsZero())
	assert.True(t, got.LastPoweredOn.IsZero())
	assert.False(t, got.LastPowerFailed)

	// A mapping without Online: always meant to be on.
	m.Online = nil
	got, err = rebootkube.ReadHost(obj, &m)
	require.NoError(t, err)
	assert.True(t, got.Online)
}

func TestReadHostAnotherErrorTypeIsNoPowerFailure(t *testing.T) {
	h := host{ns: "ns", name: "h", errorType: "provisioning error"}
	m := rebootkube.Metal3Mapping()
	got, err := rebootkube.ReadHost(h.full(), &m)
	require.NoError(t, err)
	assert.False(t, got.LastPowerFailed)
}

func TestMetal3Provisioning(t *testing.T) {
	for state, want := range map[string]reboot.Provisioning{
		"provisioned":            reboot.Provisioned,
		"externally provisioned": reboot.Provisioned,
		"deprovisioning":         reboot.Deprovisioning,
		"":                       reboot.NotProvisioned,
		"registering":            reboot.NotProvisioned,
		"available":              reboot.NotProvisioned,
		"provisioning":           reboot.NotProvisioned,
		"deleting":               reboot.NotProvisioned,
		"Provisioned":            reboot.NotProvisioned,
	} {
		assert.Equal(t, want, rebootkube.Metal3Provisioning(state), state)
	}
}

// Errors name the object and the field, and a field that cannot be read is
// never guessed.
func TestReadHostErrorsNameTheField(t *testing.T) {
	m := rebootkube.Metal3Mapping()
	for _, tc := range []struct {
		name, field string
		set         func(obj map[string]any)
	}{
		{"bool", "status.poweredOn", func(o map[string]any) { o["status"].(map[string]any)["poweredOn"] = "yes" }},
		{"online", "spec.online", func(o map[string]any) { o["spec"].(map[string]any)["online"] = 1.0 }},
		{"time", "status.provisioning.pendingRebootSince", func(o map[string]any) {
			o["status"].(map[string]any)["provisioning"].(map[string]any)["pendingRebootSince"] = "yesterday"
		}},
		{"time type", "status.provisioning.lastPoweredOn", func(o map[string]any) {
			o["status"].(map[string]any)["provisioning"].(map[string]any)["lastPoweredOn"] = 12.0
		}},
		{"not an object", "status.provisioning.state", func(o map[string]any) {
			o["status"].(map[string]any)["provisioning"] = "provisioned"
		}},
		{"error type", "status.errorType", func(o map[string]any) { o["status"].(map[string]any)["errorType"] = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := host{ns: "metal3", name: "host-0"}.full()
			tc.set(obj.Object)
			_, err := rebootkube.ReadHost(obj, &m)
			require.Error(t, err)
			var e *rebootkube.Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tc.field, e.Field)
			assert.Equal(t, rebootkube.OpRead, e.Op)
			assert.Contains(t, err.Error(), "rebootkube: metal3/host-0: read "+tc.field+": ")
		})
	}
}

func TestMappingValidate(t *testing.T) {
	m := rebootkube.Metal3Mapping()
	require.NoError(t, m.Validate(true))

	var empty rebootkube.Mapping
	err := empty.Validate(false)
	require.Error(t, err)
	for _, want := range []string{"Provisioning is required", "PendingRebootSince is required", "LastPoweredOn is required"} {
		assert.Contains(t, err.Error(), want)
	}

	m.ErrorType, m.PowerErrorType = rebootkube.ParsePath("status.fault"), ""
	assert.ErrorContains(t, m.Validate(false), "PowerErrorType is required")

	m = rebootkube.Metal3Mapping()
	m.LastPoweredOn = rebootkube.ParsePath("spec.lastPoweredOn")
	require.NoError(t, m.Validate(false))
	assert.ErrorContains(t, m.Validate(true), `LastPoweredOn: path "spec.lastPoweredOn" is not in the status`)

	m = rebootkube.Metal3Mapping()
	m.PoweredOn = rebootkube.Path{"metadata", "labels"}
	assert.ErrorContains(t, m.Validate(false), "is in metadata")
}

func TestParsePath(t *testing.T) {
	assert.Equal(t, rebootkube.Path{"status", "provisioning", "state"}, rebootkube.ParsePath("status.provisioning.state"))
	assert.Nil(t, rebootkube.ParsePath(""))
	assert.Equal(t, "status.poweredOn", rebootkube.Path{"status", "poweredOn"}.String())
}

func TestEscapeJSONPointer(t *testing.T) {
	for in, want := range map[string]string{
		"reboot.metal3.io":             "reboot.metal3.io",
		"reboot.metal3.io/a":           "reboot.metal3.io~1a",
		"reboot.metal3.io/a~b/c":       "reboot.metal3.io~1a~0b~1c",
		"reboot.metal3.io/~1":          "reboot.metal3.io~1~01",
		"reboot.metal3.io/remediation": "reboot.metal3.io~1remediation",
	} {
		assert.Equal(t, want, rebootkube.EscapeJSONPointer(in), in)
	}
}

// "remove exactly RemoveAnnotations with a JSON patch that, for each key,
// first tests its current value then removes it"
func TestAnnotationRemovalPatchTestsThenRemoves(t *testing.T) {
	ann := map[string]string{
		reboot.Annotation:                 "",
		reboot.KeyedAnnotation("a/b~c"):   `{"mode":"hard"}`,
		reboot.KeyedAnnotation("untouch"): "x",
		"example.com/other":               "y",
	}
	data, err := rebootkube.AnnotationRemovalPatch(ann, []string{reboot.Annotation, reboot.KeyedAnnotation("a/b~c")})
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"op":"test","path":"/metadata/annotations/reboot.metal3.io","value":""},
		{"op":"remove","path":"/metadata/annotations/reboot.metal3.io"},
		{"op":"test","path":"/metadata/annotations/reboot.metal3.io~1a~1b~0c","value":"{\"mode\":\"hard\"}"},
		{"op":"remove","path":"/metadata/annotations/reboot.metal3.io~1a~1b~0c"}
	]`, string(data))

	_, err = rebootkube.AnnotationRemovalPatch(ann, []string{"missing"})
	assert.Error(t, err)
}

func TestStatusPatch(t *testing.T) {
	m := rebootkube.Metal3Mapping()
	h := &rebootkube.Host{}
	at := time.Date(2024, 5, 1, 12, 0, 1, 500, time.FixedZone("x", 3600))

	data, err := rebootkube.StatusPatch(&m, h, rebootkube.StatusUpdate{PendingRebootSince: &at}, "42")
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"42"},"status":{"provisioning":{"pendingRebootSince":"2024-05-01T11:00:01Z"}}}`, string(data))

	data, err = rebootkube.StatusPatch(&m, h, rebootkube.StatusUpdate{PendingRebootSince: &time.Time{}}, "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":{"provisioning":{"pendingRebootSince":null}}}`, string(data))

	data, err = rebootkube.StatusPatch(&m, h, rebootkube.StatusUpdate{
		PoweredOn: ptr(true), LastPoweredOn: &at, PowerFailed: ptr(true), PowerError: "fence: node host-0: off: refused",
	}, "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":{"poweredOn":true,"errorType":"power management error","errorMessage":"fence: node host-0: off: refused",
		"provisioning":{"lastPoweredOn":"2024-05-01T11:00:01Z"}}}`, string(data))

	// Clearing the mark only when it is set.
	data, err = rebootkube.StatusPatch(&m, h, rebootkube.StatusUpdate{PowerFailed: ptr(false)}, "")
	require.NoError(t, err)
	assert.Nil(t, data, "nothing to clear")
	data, err = rebootkube.StatusPatch(&m, &rebootkube.Host{LastPowerFailed: true}, rebootkube.StatusUpdate{PowerFailed: ptr(false)}, "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":{"errorType":null,"errorMessage":null}}`, string(data))

	// A mapping without a power record writes none.
	m.PoweredOn = nil
	data, err = rebootkube.StatusPatch(&m, h, rebootkube.StatusUpdate{PoweredOn: ptr(false)}, "1")
	require.NoError(t, err)
	assert.Nil(t, data)
}

func TestStatusPatchClipsLongMessages(t *testing.T) {
	m := rebootkube.Metal3Mapping()
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	data, err := rebootkube.StatusPatch(&m, &rebootkube.Host{}, rebootkube.StatusUpdate{PowerFailed: ptr(true), PowerError: string(long)}, "")
	require.NoError(t, err)
	var p struct {
		Status struct {
			ErrorMessage string `json:"errorMessage"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(data, &p))
	assert.Len(t, p.Status.ErrorMessage, 1024+3)
}
