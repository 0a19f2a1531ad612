package fencekube_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// decode converts an object all the way to a record.
func decode(u *unstructured.Unstructured) (*flow.NodeFence, error) {
	o, err := fencekube.FromUnstructured(u)
	if err != nil {
		return nil, err
	}
	return fencekube.Record(o)
}

func TestRoundTrip(t *testing.T) {
	nf := sample("worker-1")
	nf.Version = "42"
	u := object(t, nf)

	// Through JSON, as the API server stores it.
	raw, err := json.Marshal(u.Object)
	require.NoError(t, err)
	back := &unstructured.Unstructured{}
	require.NoError(t, back.UnmarshalJSON(raw))

	got, err := decode(back)
	require.NoError(t, err)
	assert.Equal(t, nf, got)
	assert.Equal(t, "2026-03-01T12:00:03.123456Z", back.Object["status"].(map[string]any)["jobs"].([]any)[1].(map[string]any)["started"],
		"times are kept to the microsecond")
	assert.NotContains(t, back.Object["status"].(map[string]any)["jobs"].([]any)[1], "state", "an unknown state is left out")
}

func TestRoundTripTruncatesToMicroseconds(t *testing.T) {
	nf := sample("worker-1")
	nf.Changed = t0.Add(1500 * time.Nanosecond)
	got, err := decode(object(t, nf))
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Microsecond), got.Changed)
}

func TestRecordFields(t *testing.T) {
	u := object(t, sample("worker-1"))
	u.SetResourceVersion("7")
	ts := metav1.NewTime(t0)
	u.SetDeletionTimestamp(&ts)
	require.NoError(t, unstructured.SetNestedField(u.Object, int64(3), "spec", "retry"))
	require.NoError(t, unstructured.SetNestedField(u.Object, int64(2), "status", "observedRetry"))
	nf, err := decode(u)
	require.NoError(t, err)
	assert.Equal(t, "7", nf.Version)
	assert.True(t, nf.Deleting, "deletionTimestamp set")
	assert.True(t, nf.Clear, "spec.retry above observedRetry")

	require.NoError(t, unstructured.SetNestedField(u.Object, int64(3), "status", "observedRetry"))
	nf, err = decode(u)
	require.NoError(t, err)
	assert.False(t, nf.Clear)
}

func TestUninitializedObject(t *testing.T) {
	// What a create leaves before the status is written.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fencekit.io/v1alpha1", "kind": "NodeFence",
		"metadata": map[string]any{"name": "worker-1", "resourceVersion": "5", "creationTimestamp": "2026-03-01T11:00:00Z"},
		"spec":     map[string]any{"node": "worker-1", "retry": int64(1)},
	}}
	nf, err := decode(u)
	require.NoError(t, err)
	created := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	assert.Equal(t, &flow.NodeFence{
		Node: "worker-1", Step: fence.StepIsolation, Status: flow.StatusNew,
		Created: created, StepStarted: created, Changed: created,
		Message: "NodeFence created; its status is not written yet", Version: "5", Clear: true,
	}, nf)
	assert.False(t, nf.Active(), "nothing was done through it: it does not count as a fencing yet")
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name   string
		change func(m map[string]any)
		field  string
		msg    string
	}{
		{"unknown step", func(m map[string]any) { status(m)["step"] = "power-management" }, "status.step", `"power-management" is not a step`},
		{"missing step", func(m map[string]any) { delete(status(m), "step") }, "status.step", "missing"},
		{"unknown status", func(m map[string]any) { status(m)["status"] = "done" }, "status.status", `"done" is not a status`},
		{"missing status", func(m map[string]any) { delete(status(m), "status") }, "status.status", "missing"},
		{"step not a string", func(m map[string]any) { status(m)["step"] = int64(1) }, "status.step", "a number is not a string"},
		{"node mismatch", func(m map[string]any) { spec(m)["node"] = "worker-2" }, "spec.node", `"worker-2" is not the object's name "worker-1"`},
		{"node missing", func(m map[string]any) { delete(spec(m), "node") }, "spec.node", "missing"},
		{"spec missing", func(m map[string]any) { delete(m, "spec") }, "spec.node", "missing"},
		{"spec not an object", func(m map[string]any) { m["spec"] = "x" }, "spec", "a string is not an object"},
		{"negative retry", func(m map[string]any) { spec(m)["retry"] = int64(-1) }, "spec.retry", "-1 is negative"},
		{"retry not an integer", func(m map[string]any) { spec(m)["retry"] = 1.5 }, "spec.retry", "1.5 is not an integer"},
		{"negative observedRetry", func(m map[string]any) { status(m)["observedRetry"] = int64(-2) }, "status.observedRetry", "negative"},
		{"bad time", func(m map[string]any) { status(m)["changed"] = "yesterday" }, "status.changed", `"yesterday" is not an RFC 3339 time`},
		{"time not a string", func(m map[string]any) { status(m)["created"] = int64(1) }, "status.created", "a number is not a string"},
		{"negative retries", func(m map[string]any) { status(m)["retries"] = int64(-1) }, "status.retries", "out of range"},
		{"polls a string", func(m map[string]any) { status(m)["polls"] = "2" }, "status.polls", "a string is not an integer"},
		{"isolated a string", func(m map[string]any) { status(m)["isolated"] = "true" }, "status.isolated", "a string is not a boolean"},
		{"bad release", func(m map[string]any) { status(m)["released"] = "All" }, "status.released", `"All" is not a pod release`},
		{"bad releasing", func(m map[string]any) { status(m)["releasing"] = "power" }, "status.releasing", `"power" is not a pod release`},
		{"jobs not a list", func(m map[string]any) { status(m)["jobs"] = "x" }, "status.jobs", "a string is not a list"},
		{"job not an object", func(m map[string]any) { status(m)["jobs"] = []any{"x"} }, "status.jobs[0]", "not an object"},
		{"job step", func(m map[string]any) { job(m, 1)["step"] = "reboot" }, "status.jobs[1].step", `"reboot" is not a step`},
		{"job level", func(m map[string]any) { job(m, 0)["level"] = int64(-1) }, "status.jobs[0].level", "out of range"},
		{"job index", func(m map[string]any) { job(m, 0)["index"] = int64(1 << 40) }, "status.jobs[0].index", "out of range"},
		{"job method", func(m map[string]any) { delete(job(m, 2), "method") }, "status.jobs[2].method", "missing"},
		{"job started", func(m map[string]any) { delete(job(m, 0), "started") }, "status.jobs[0].started", "missing"},
		{"job finished", func(m map[string]any) { job(m, 0)["finished"] = "2026-13-01T00:00:00Z" }, "status.jobs[0].finished", "not an RFC 3339 time"},
		{"job state", func(m map[string]any) { job(m, 0)["state"] = "OFF" }, "status.jobs[0].state", `"OFF" is not a state`},
		{"job ok", func(m map[string]any) { job(m, 0)["ok"] = "yes" }, "status.jobs[0].ok", "not a boolean"},
		{"history step", func(m map[string]any) { hist(m, 1)["step"] = "" }, "status.history[1].step", "missing"},
		{"history status", func(m map[string]any) { hist(m, 0)["status"] = "Gone" }, "status.history[0].status", `"Gone" is not a status`},
		{"history time", func(m map[string]any) { delete(hist(m, 0), "time") }, "status.history[0].time", "missing"},
		{"apiVersion", func(m map[string]any) { m["apiVersion"] = "fencekit.io/v1" }, "apiVersion", `"fencekit.io/v1" is not fencekit.io/v1alpha1`},
		{"kind", func(m map[string]any) { m["kind"] = "NodeFences" }, "kind", `"NodeFences" is not NodeFence`},
		{"no name", func(m map[string]any) { delete(m["metadata"].(map[string]any), "name") }, "metadata.name", "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := object(t, sample("worker-1"))
			tt.change(u.Object)
			_, err := decode(u)
			require.Error(t, err)
			assert.ErrorIs(t, err, fencekube.ErrMalformed)
			var e *fencekube.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.field, e.Field)
			assert.Equal(t, fencekube.OpDecode, e.Op)
			assert.Equal(t, "NodeFence", e.Kind)
			assert.Contains(t, err.Error(), tt.msg)
			if tt.field != "metadata.name" {
				assert.Contains(t, err.Error(), "fencekube: NodeFence worker-1: decode "+tt.field+": malformed NodeFence: ")
			}
		})
	}
}

func TestMalformedJoinsErrors(t *testing.T) {
	u := object(t, sample("worker-1"))
	status(u.Object)["step"] = "x"
	status(u.Object)["status"] = "y"
	_, err := decode(u)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "status.step")
	assert.Contains(t, err.Error(), "status.status")
}

func TestTypedCopy(t *testing.T) {
	o := fencekube.FromRecord(sample("worker-1"))
	c := o.DeepCopy()
	require.Equal(t, o, c)
	c.Status.Jobs[0].Method = "changed"
	c.Status.Changed.Time = time.Time{}
	c.Status.History[0].Time.Time = time.Time{}
	assert.Equal(t, "pdu-off", o.Status.Jobs[0].Method)
	assert.False(t, o.Status.Changed.IsZero())
	assert.False(t, o.Status.History[0].Time.IsZero())

	l := &fencekube.NodeFenceList{Items: []fencekube.NodeFence{*o}}
	lc := l.DeepCopyObject().(*fencekube.NodeFenceList)
	lc.Items[0].Status.Jobs[0].Method = "changed"
	assert.Equal(t, "pdu-off", l.Items[0].Status.Jobs[0].Method)
}

func TestErrorMessage(t *testing.T) {
	err := &fencekube.Error{Kind: "Node", Name: "worker-1", Op: fencekube.OpTaint, Field: "spec.taints", Err: errors.New("boom")}
	assert.Equal(t, "fencekube: Node worker-1: taint spec.taints: boom", err.Error())
	err = &fencekube.Error{Kind: "NodeFence", Op: fencekube.OpList, Err: errors.New("boom")}
	assert.Equal(t, "fencekube: NodeFence: list: boom", err.Error())
}

func status(m map[string]any) map[string]any { return m["status"].(map[string]any) }
func spec(m map[string]any) map[string]any   { return m["spec"].(map[string]any) }
func job(m map[string]any, i int) map[string]any {
	return status(m)["jobs"].([]any)[i].(map[string]any)
}
func hist(m map[string]any, i int) map[string]any {
	return status(m)["history"].([]any)[i].(map[string]any)
}

// FuzzDecode feeds arbitrary JSON objects to the conversion: it never
// panics, and a record it accepts converts back to an object that reads
// as the same record.
func FuzzDecode(f *testing.F) {
	good, err := json.Marshal(object(f, sample("worker-1")).Object)
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"apiVersion":"fencekit.io/v1alpha1","kind":"NodeFence","metadata":{"name":"n"},"spec":{"node":"n"}}`))
	f.Add([]byte(`{"apiVersion":"fencekit.io/v1alpha1","kind":"NodeFence","metadata":{"name":"n"},"spec":{"node":"n","retry":2},"status":{"step":"recovery","status":"Done","history":[{"time":"2026-03-01T12:00:00.5+02:00","step":"recovery","status":"Done"}]}}`))
	f.Add([]byte(`{"apiVersion":"fencekit.io/v1alpha1","kind":"NodeFence","metadata":{"name":"n"},"spec":{"node":"m"},"status":{"jobs":[{}],"retries":1e300}}`))
	f.Add([]byte(`{"metadata":{"name":5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return
		}
		nf, err := decode(u)
		if err != nil {
			require.ErrorIs(t, err, fencekube.ErrMalformed)
			return
		}
		again, err := decode(object(t, nf))
		require.NoError(t, err, "a record read converts back")
		nf.Clear, nf.Deleting = false, false
		assert.Equal(t, normalize(nf), normalize(again))
	})
}

// normalize puts a record's times in UTC, to the microsecond, as an object
// stores them.
func normalize(nf *flow.NodeFence) *flow.NodeFence {
	c := nf.Clone()
	n := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.UTC().Truncate(time.Microsecond)
		}
	}
	n(&c.Created)
	n(&c.StepStarted)
	n(&c.Changed)
	n(&c.LastPoll)
	n(&c.FencedAt)
	n(&c.PodsWaitSince)
	for i := range c.Jobs {
		n(&c.Jobs[i].Started)
		n(&c.Jobs[i].Finished)
	}
	for i := range c.History {
		n(&c.History[i].Time)
	}
	return c
}
