package fencekube_test

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// propSchema is the part of an openAPIV3Schema the test reads.
type propSchema struct {
	Type       string                `json:"type"`
	Format     string                `json:"format"`
	Enum       []string              `json:"enum"`
	Required   []string              `json:"required"`
	Properties map[string]propSchema `json:"properties"`
	Items      *propSchema           `json:"items"`
}

type crd struct {
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name         string         `json:"name"`
			Subresources map[string]any `json:"subresources"`
			Schema       struct {
				OpenAPIV3Schema propSchema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

func readCRD(t *testing.T) crd {
	raw, err := os.ReadFile(crdPath)
	require.NoError(t, err)
	var c crd
	require.NoError(t, yaml.Unmarshal(raw, &c))
	return c
}

// The CRD matches the Go types: every field of the Go types is in the
// propSchema with its JSON type (the API server would silently drop a field
// that is not), and the enums are the values the conversion accepts.
func TestCRDMatchesTypes(t *testing.T) {
	c := readCRD(t)
	assert.Equal(t, fencekube.Group, c.Spec.Group)
	assert.Equal(t, "Cluster", c.Spec.Scope)
	assert.Equal(t, fencekube.Kind, c.Spec.Names.Kind)
	assert.Equal(t, fencekube.Resource, c.Spec.Names.Plural)
	require.Len(t, c.Spec.Versions, 1)
	v := c.Spec.Versions[0]
	assert.Equal(t, fencekube.Version, v.Name)
	assert.Contains(t, v.Subresources, "status")
	root := v.Schema.OpenAPIV3Schema

	checkType(t, "spec", reflect.TypeFor[fencekube.NodeFenceSpec](), root.Properties["spec"])
	checkType(t, "status", reflect.TypeFor[fencekube.NodeFenceStatus](), root.Properties["status"])

	var steps, statuses []string
	for _, s := range fence.Steps() {
		steps = append(steps, s.String())
	}
	for _, s := range []fence.FenceStatus{fence.StatusNew, fence.StatusRunning, fence.StatusDone, fence.StatusError, fence.StatusFailed} {
		statuses = append(statuses, string(s))
	}
	st := root.Properties["status"]
	assert.ElementsMatch(t, steps, st.Properties["step"].Enum)
	assert.ElementsMatch(t, steps, st.Properties["jobs"].Items.Properties["step"].Enum)
	assert.ElementsMatch(t, steps, st.Properties["history"].Items.Properties["step"].Enum)
	assert.ElementsMatch(t, statuses, st.Properties["status"].Enum)
	assert.ElementsMatch(t, statuses, st.Properties["history"].Items.Properties["status"].Enum)
	releases := []string{string(fence.ReleaseNone), string(fence.ReleaseStorage), string(fence.ReleasePower)}
	assert.ElementsMatch(t, releases, st.Properties["released"].Enum)
	assert.ElementsMatch(t, releases, st.Properties["releasing"].Enum)
	assert.ElementsMatch(t, []string{"", "on", "off", "unknown"}, st.Properties["jobs"].Items.Properties["state"].Enum)
}

// checkType checks that every JSON field of the struct type typ is in s.
func checkType(t *testing.T, path string, typ reflect.Type, s propSchema) {
	t.Helper()
	require.Equal(t, "object", s.Type, path)
	var fields []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		fields = append(fields, name)
		fp := path + "." + name
		p, ok := s.Properties[name]
		if !assert.True(t, ok, "%s is not in the CRD's propSchema", fp) {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Name() == "MicroTime":
			assert.Equal(t, "string", p.Type, fp)
			assert.Equal(t, "date-time", p.Format, fp)
		case ft.Kind() == reflect.String:
			assert.Equal(t, "string", p.Type, fp)
		case ft.Kind() == reflect.Int64:
			assert.Equal(t, "integer", p.Type, fp)
			assert.Equal(t, "int64", p.Format, fp)
		case ft.Kind() == reflect.Bool:
			assert.Equal(t, "boolean", p.Type, fp)
		case ft.Kind() == reflect.Slice:
			assert.Equal(t, "array", p.Type, fp)
			require.NotNil(t, p.Items, fp)
			checkType(t, fp+"[]", ft.Elem(), *p.Items)
		default:
			t.Errorf("%s: unexpected Go type %v", fp, ft)
		}
	}
	var extra []string
	for name := range s.Properties {
		found := false
		for _, f := range fields {
			found = found || f == name
		}
		if !found {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	assert.Empty(t, extra, "%s: fields of the propSchema the Go type does not have", path)
}
