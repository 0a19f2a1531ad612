package kubefake_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fencekit/fencekit/internal/kubefake"
)

// The requests are recorded in order, with their kind, object and patch;
// an error of before answers a request in place of the fake.
func TestRecordsAndAnswers(t *testing.T) {
	refused := errors.New("refused")
	c := kubefake.New(fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}},
	).Build(), func(r kubefake.Request) error {
		if r.Verb == "delete" {
			return refused
		}
		return nil
	})
	ctx := t.Context()
	n := &corev1.Node{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "worker-0"}, n))
	require.NoError(t, c.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))))
	require.NoError(t, c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("ns")))
	assert.ErrorIs(t, c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}, client.GracePeriodSeconds(0)), refused)

	rs := c.Requests()
	require.Len(t, rs, 4)
	assert.Equal(t, "get Node worker-0", rs[0].String())
	assert.Equal(t, `patch Node worker-0 {"metadata":{"labels":{"a":"b"}}}`, rs[1].String())
	assert.Equal(t, types.MergePatchType, rs[1].PatchType)
	assert.Equal(t, "list ConfigMapList", rs[2].String())
	assert.Equal(t, "delete ConfigMap ns/cm", rs[3].String())
	require.NotNil(t, rs[3].Delete.GracePeriodSeconds)
	assert.Zero(t, *rs[3].Delete.GracePeriodSeconds)

	// The refused delete did not reach the fake; the test's own reads are
	// not recorded.
	require.NoError(t, c.Fake.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cm"}, &corev1.ConfigMap{}))
	assert.Equal(t, []string{`patch Node worker-0 {"metadata":{"labels":{"a":"b"}}}`, "delete ConfigMap ns/cm"}, c.TakeWrites())
	assert.Empty(t, c.Requests(), "TakeWrites takes the requests")
}
