package fencekube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// ConfirmationPolicy on the real API server: without deploy/confirm.yaml's
// policy, every confirmation is refused with why; with it, accepted; a
// binding that only warns, or a policy that fails open, is refused again.
// An answer is kept for the TTL.
func TestConfirmationPolicyInForce(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	now := time.Now()
	p := &fencekube.ConfirmationPolicy{Client: c.Objects(), Now: func() time.Time { return now }}
	expire := func() { now = now.Add(time.Minute) }

	err := p.Check(ctx)
	require.Error(t, err)
	assert.Equal(t, "the admission policy fencekit-confirmations that proves who confirms (deploy/confirm.yaml) is not in force: its binding does not exist", err.Error())

	c.Create(t, kubetest.Objects(t, "../../deploy/confirm.yaml")...)
	assert.Error(t, p.Check(ctx), "the answer is kept for the TTL")
	expire()
	assert.NoError(t, p.Check(ctx))

	reg := c.Client().AdmissionregistrationV1()
	b, err := reg.ValidatingAdmissionPolicyBindings().Get(ctx, fencekube.ConfirmationPolicyName, metav1.GetOptions{})
	require.NoError(t, err)
	b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
	_, err = reg.ValidatingAdmissionPolicyBindings().Update(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	expire()
	assert.ErrorContains(t, p.Check(ctx), "its binding does not deny (validationActions [Warn])")

	b, err = reg.ValidatingAdmissionPolicyBindings().Get(ctx, fencekube.ConfirmationPolicyName, metav1.GetOptions{})
	require.NoError(t, err)
	b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Deny}
	_, err = reg.ValidatingAdmissionPolicyBindings().Update(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	pol, err := reg.ValidatingAdmissionPolicies().Get(ctx, fencekube.ConfirmationPolicyName, metav1.GetOptions{})
	require.NoError(t, err)
	ignore := admissionv1.Ignore
	pol.Spec.FailurePolicy = &ignore
	_, err = reg.ValidatingAdmissionPolicies().Update(ctx, pol, metav1.UpdateOptions{})
	require.NoError(t, err)
	expire()
	assert.ErrorContains(t, p.Check(ctx), "its failurePolicy is Ignore, not Fail")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	expire()
	assert.Error(t, p.Check(cctx), "a cancelled check is an error, and not kept")
}
