package fencekube_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// decode converts an object to a record.
func decode(o *fencekube.NodeFence) (*flow.NodeFence, error) { return fencekube.Record(o) }

// throughJSON returns o as a typed client reads it back from the API
// server's JSON.
func throughJSON(t testing.TB, o *fencekube.NodeFence) (*fencekube.NodeFence, map[string]any) {
	t.Helper()
	raw, err := json.Marshal(o)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	back := &fencekube.NodeFence{}
	require.NoError(t, json.Unmarshal(raw, back))
	return back, m
}

func TestRoundTrip(t *testing.T) {
	nf := sample("worker-1")
	nf.Version = "42"
	back, m := throughJSON(t, object(t, nf))

	got, err := decode(back)
	require.NoError(t, err)
	assert.Equal(t, nf, got)
	assert.Equal(t, "2026-03-01T12:00:03.123456Z", m["status"].(map[string]any)["jobs"].([]any)[1].(map[string]any)["started"],
		"times are kept to the microsecond")
	assert.NotContains(t, m["status"].(map[string]any)["jobs"].([]any)[1], "state", "an unknown state is left out")
}

func TestRoundTripTruncatesToMicroseconds(t *testing.T) {
	nf := sample("worker-1")
	nf.Changed = t0.Add(1500 * time.Nanosecond)
	back, _ := throughJSON(t, object(t, nf))
	got, err := decode(back)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Microsecond), got.Changed)
}

func TestRecordFields(t *testing.T) {
	o := object(t, sample("worker-1"))
	o.ResourceVersion = "7"
	ts := metav1.NewTime(t0)
	o.DeletionTimestamp = &ts
	o.Spec.Retry = 3
	o.Status.ObservedRetry = 2
	nf, err := decode(o)
	require.NoError(t, err)
	assert.Equal(t, "7", nf.Version)
	assert.True(t, nf.Deleting, "deletionTimestamp set")
	assert.True(t, nf.Clear, "spec.retry above observedRetry")

	o.Status.ObservedRetry = 3
	nf, err = decode(o)
	require.NoError(t, err)
	assert.False(t, nf.Clear)
}

func TestUninitializedObject(t *testing.T) {
	// What a create leaves before the status is written.
	o := &fencekube.NodeFence{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", ResourceVersion: "5",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))},
		Spec: fencekube.NodeFenceSpec{Node: "worker-1", Retry: 1},
	}
	nf, err := decode(o)
	require.NoError(t, err)
	created := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	assert.Equal(t, &flow.NodeFence{
		Node: "worker-1", Step: fence.StepIsolation, Status: flow.StatusNew,
		Created: created, StepStarted: created, Changed: created,
		Message: "NodeFence created; its status is not written yet", Version: "5", Clear: true,
	}, nf)
	assert.False(t, nf.Active(), "nothing was done through it: it does not count as a fencing yet")
}

// TestMalformed: what the CRD's schema cannot refuse, Record does, naming
// the field. (A field of the wrong JSON type or a time that does not parse
// never reaches a typed client: TestIntegrationMalformed shows the API
// server refusing them.)
func TestMalformed(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *fencekube.NodeFence)
		field  string
		msg    string
	}{
		{"unknown step", func(o *fencekube.NodeFence) { o.Status.Step = "power-management" }, "status.step", `"power-management" is not a step`},
		{"missing step", func(o *fencekube.NodeFence) { o.Status.Step = "" }, "status.step", "missing"},
		{"unknown status", func(o *fencekube.NodeFence) { o.Status.Status = "done" }, "status.status", `"done" is not a status`},
		{"missing status", func(o *fencekube.NodeFence) { o.Status.Status = "" }, "status.status", "missing"},
		{"node mismatch", func(o *fencekube.NodeFence) { o.Spec.Node = "worker-2" }, "spec.node", `"worker-2" is not the object's name "worker-1"`},
		{"node missing", func(o *fencekube.NodeFence) { o.Spec.Node = "" }, "spec.node", "missing"},
		{"negative retry", func(o *fencekube.NodeFence) { o.Spec.Retry = -1 }, "spec.retry", "-1 is negative"},
		{"negative observedRetry", func(o *fencekube.NodeFence) { o.Status.ObservedRetry = -2 }, "status.observedRetry", "negative"},
		{"negative retries", func(o *fencekube.NodeFence) { o.Status.Retries = -1 }, "status.retries", "out of range"},
		{"bad release", func(o *fencekube.NodeFence) { o.Status.Released = "All" }, "status.released", `"All" is not a pod release`},
		{"bad releasing", func(o *fencekube.NodeFence) { o.Status.Releasing = "power" }, "status.releasing", `"power" is not a pod release`},
		{"job step", func(o *fencekube.NodeFence) { o.Status.Jobs[1].Step = "reboot" }, "status.jobs[1].step", `"reboot" is not a step`},
		{"job level", func(o *fencekube.NodeFence) { o.Status.Jobs[0].Level = -1 }, "status.jobs[0].level", "out of range"},
		{"job index", func(o *fencekube.NodeFence) { o.Status.Jobs[0].Index = 1 << 40 }, "status.jobs[0].index", "out of range"},
		{"job method", func(o *fencekube.NodeFence) { o.Status.Jobs[2].Method = "" }, "status.jobs[2].method", "missing"},
		{"job started", func(o *fencekube.NodeFence) { o.Status.Jobs[0].Started = nil }, "status.jobs[0].started", "missing"},
		{"job state", func(o *fencekube.NodeFence) { o.Status.Jobs[0].State = "OFF" }, "status.jobs[0].state", `"OFF" is not a state`},
		{"history step", func(o *fencekube.NodeFence) { o.Status.History[1].Step = "" }, "status.history[1].step", "missing"},
		{"history status", func(o *fencekube.NodeFence) { o.Status.History[0].Status = "Gone" }, "status.history[0].status", `"Gone" is not a status`},
		{"history time", func(o *fencekube.NodeFence) { o.Status.History[0].Time = nil }, "status.history[0].time", "missing"},
		{"no name", func(o *fencekube.NodeFence) { o.Name = "" }, "metadata.name", "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := object(t, sample("worker-1"))
			tt.change(o)
			_, err := decode(o)
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
	o := object(t, sample("worker-1"))
	o.Status.Step, o.Status.Status = "x", "y"
	_, err := decode(o)
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

// FuzzDecode feeds arbitrary JSON objects, decoded as the typed client
// decodes them, to the conversion: it never panics, and a record it
// accepts converts back to an object that reads as the same record.
func FuzzDecode(f *testing.F) {
	good, err := json.Marshal(object(f, sample("worker-1")))
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"apiVersion":"fencekit.io/v1alpha1","kind":"NodeFence","metadata":{"name":"n"},"spec":{"node":"n"}}`))
	f.Add([]byte(`{"apiVersion":"fencekit.io/v1alpha1","kind":"NodeFence","metadata":{"name":"n"},"spec":{"node":"n","retry":2},"status":{"step":"recovery","status":"Done","history":[{"time":"2026-03-01T12:00:00.5+02:00","step":"recovery","status":"Done"}]}}`))
	f.Add([]byte(`{"apiVersion":"fencekit.io/v1alpha1","kind":"NodeFence","metadata":{"name":"n"},"spec":{"node":"m"},"status":{"jobs":[{}],"retries":1e300}}`))
	f.Add([]byte(`{"metadata":{"name":5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := &fencekube.NodeFence{}
		if err := json.Unmarshal(data, o); err != nil {
			return
		}
		nf, err := decode(o)
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
