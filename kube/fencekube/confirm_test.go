package fencekube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/internal/kubetest"
	"github.com/fencekit/fencekit/kube/confirmation"
	"github.com/fencekit/fencekit/kube/fencekube"
)

// ConfirmationProof on the real API server, with no admission policy in
// force at all (the schedule that made the policy-based check lie: a
// confirmation written while the policy was absent, only warned or was
// changed, and honoured once it was back): only a confirmation whose
// record the API server wrote as made by its by, naming this node, this
// incident and this reason, by a user the API server says may confirm, is
// proven. Every other is refused for good (controller.ErrUnproven), with
// why.
func TestConfirmationProof(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	admin := c.Client()
	id := kubetest.UniqueName(t)
	node, other := "dead-"+id, "other-"+id
	alice, bob, carol := "alice-"+id, "bob-"+id, "carol-"+id
	role := func(name string, rules ...rbacv1.PolicyRule) {
		_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoles().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		})
	}
	bind := func(user, roleName string) {
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), user, metav1.DeleteOptions{})
		})
	}
	csrs := rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create"}}
	// alice may confirm (as fencekit-confirm grants); bob may patch
	// NodeFences and create requests, not confirm; carol may create
	// requests only.
	role("confirm-"+id, csrs, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.Group}, Resources: []string{"nodefences"}, Verbs: []string{"get", "patch", confirmation.Verb}})
	role("patch-"+id, csrs, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.Group}, Resources: []string{"nodefences"}, Verbs: []string{"get", "patch", "update"}})
	role("csr-"+id, csrs)
	bind(alice, "confirm-"+id)
	bind(bob, "patch-"+id)
	bind(carol, "csr-"+id)
	as := func(user string) kubernetes.Interface {
		cfg := c.Config()
		cfg.Impersonate.UserName = user
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return cs
	}
	require.Eventually(t, func() bool {
		rev, err := as(alice).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: confirmation.Verb, Group: v1alpha1.Group, Resource: "nodefences", Name: node}}}, metav1.CreateOptions{})
		return err == nil && rev.Status.Allowed
	}, 10*time.Second, 20*time.Millisecond, "the RBAC of %s", alice)

	incident := time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Microsecond)
	const reason = "rack B7 dark, checked on site"
	request := func(user string, cl confirmation.Claim, signer string) string {
		csr, err := confirmation.Request(cl)
		require.NoError(t, err)
		if signer != "" {
			csr.Spec.SignerName = signer
		}
		csr, err = as(user).CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.WithoutCancel(ctx), csr.Name, metav1.DeleteOptions{})
		})
		return csr.Name
	}
	claim := confirmation.Claim{Node: node, Incident: incident, Reason: reason}
	aliceReq := request(alice, claim, "")
	bobReq := request(bob, claim, "")
	carolReq := request(carol, claim, "")
	aliceOther := request(alice, confirmation.Claim{Node: other, Incident: incident, Reason: reason}, "")
	aliceEarlier := request(alice, confirmation.Claim{Node: node, Incident: incident.Add(-time.Hour), Reason: reason}, "")
	aliceWhy := request(alice, confirmation.Claim{Node: node, Incident: incident, Reason: "something else"}, "")
	aliceSigner := request(alice, claim, "example.com/other")

	p := &fencekube.ConfirmationProof{Reader: c.Objects(), Client: c.Objects()}
	conf := func(by, req string) flow.Confirmation {
		return flow.Confirmation{By: by, Reason: reason, Incident: incident, Request: req}
	}
	for _, tc := range []struct {
		name string
		c    flow.Confirmation
		want string
	}{
		{"bob writes alice's name, no record", conf(alice, ""), "it names no record of who made it"},
		{"bob writes alice's name over his own record", conf(alice, bobReq), `the API server recorded "` + bob + `" as the maker of CertificateSigningRequest ` + bobReq + `, not "` + alice + `"`},
		{"bob under his own name", conf(bob, bobReq), "user " + bob + " may not confirm that node " + node + " is off: that needs the verb confirm on nodefences"},
		{"carol, who may not even patch", conf(carol, carolReq), "user " + carol + " may not confirm"},
		{"alice's record of another node", conf(alice, aliceOther), "confirms node " + other + ", not " + node},
		{"alice's record of an earlier incident", conf(alice, aliceEarlier), "confirms the incident that began"},
		{"alice's record of another reason", conf(alice, aliceWhy), "was made for another reason"},
		{"another signer's request", conf(alice, aliceSigner), `its signer is "example.com/other"`},
		{"a record that does not exist", conf(alice, "fencekit-confirm-nothing"), "CertificateSigningRequest fencekit-confirm-nothing, does not exist"},
	} {
		err := p.Check(ctx, node, tc.c)
		if assert.Error(t, err, tc.name) {
			assert.ErrorIs(t, err, controller.ErrUnproven, tc.name)
			assert.Contains(t, err.Error(), tc.want, tc.name)
			assert.Contains(t, err.Error(), "confirm again (kubectl fence confirm "+node+")", tc.name)
		}
	}

	// alice's own, for this node, incident and reason: proven.
	require.NoError(t, p.Check(ctx, node, conf(alice, aliceReq)))
	// ... and not for another node's NodeFence.
	assert.ErrorIs(t, p.Check(ctx, other, conf(alice, aliceReq)), controller.ErrUnproven)

	// Her right withdrawn: refused, whatever she wrote before.
	require.NoError(t, admin.RbacV1().ClusterRoleBindings().Delete(ctx, alice, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		err := p.Check(ctx, node, conf(alice, aliceReq))
		return err != nil && assert.ErrorIs(t, err, controller.ErrUnproven)
	}, 10*time.Second, 20*time.Millisecond)

	// The requests stay pending: nobody signs them.
	got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, aliceReq, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, confirmation.SignerName, got.Spec.SignerName)
	assert.Empty(t, got.Status.Certificate)
	assert.NotContains(t, got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved})
}
