package fencegroupkube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/fencegroup"
)

var t0 = time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)

// health returns a health cache of cluster whose status the test sets with
// Set, on a clock starting at t0.
func health(t *testing.T, cluster string) (*fencegroup.Health, *fencetest.Clock) {
	t.Helper()
	clk := fencetest.NewClock(t0)
	h, err := fencegroup.NewHealth(cluster, fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		return nil, context.DeadlineExceeded
	}), fencegroup.HealthOptions{Now: clk.Now})
	require.NoError(t, err)
	return h, clk
}

// status is a Ceph status with clean and not clean PGs and OSDs on hosts
// (two each, up).
func status(clean, dirty int, hosts ...string) *fencegroup.Status {
	st := &fencegroup.Status{NumPGs: int64(clean + dirty), NumPools: 3,
		PGs: []fencegroup.PGCount{{State: "active+clean", Count: int64(clean)}}, Placement: []fencegroup.OSD{}}
	if dirty > 0 {
		st.PGs = append(st.PGs, fencegroup.PGCount{State: "active+undersized+degraded", Count: int64(dirty)})
	}
	for i, h := range hosts {
		st.Placement = append(st.Placement, fencegroup.OSD{ID: 2 * i, Host: h, State: fencegroup.OSDUp},
			fencegroup.OSD{ID: 2*i + 1, Host: h, State: fencegroup.OSDUp})
	}
	return st
}

// convert reads an object's JSON form into a Go value.
func convert(m map[string]any, v any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, v)
}
