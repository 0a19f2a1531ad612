package fencekube_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
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

// The CRD, generated from the Go types of api/v1alpha1 by controller-gen
// (make generate; make test fails when it is stale), takes exactly the
// values the conversion to a record accepts.
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

	var steps, statuses []string
	for _, s := range fence.Steps() {
		steps = append(steps, s.String())
	}
	for _, s := range []flow.Status{flow.StatusNew, flow.StatusRunning, flow.StatusDone, flow.StatusError, flow.StatusFailed} {
		statuses = append(statuses, string(s))
	}
	st := root.Properties["status"]
	assert.ElementsMatch(t, steps, st.Properties["step"].Enum)
	assert.ElementsMatch(t, steps, st.Properties["jobs"].Items.Properties["step"].Enum)
	assert.ElementsMatch(t, steps, st.Properties["history"].Items.Properties["step"].Enum)
	assert.ElementsMatch(t, statuses, st.Properties["status"].Enum)
	assert.ElementsMatch(t, statuses, st.Properties["history"].Items.Properties["status"].Enum)
	releases := []string{string(flow.ReleaseNone), string(flow.ReleaseStorage), string(flow.ReleasePower), string(flow.ReleaseDump)}
	assert.ElementsMatch(t, releases, st.Properties["released"].Enum)
	assert.ElementsMatch(t, releases, st.Properties["releasing"].Enum)
	assert.ElementsMatch(t, []string{"", "on", "off", "unknown"}, st.Properties["jobs"].Items.Properties["state"].Enum)
	assert.Equal(t, "array", st.Properties["conditions"].Type)
}
