package fencekube

import (
	"context"
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/kube/confirmation"
)

// ConfirmationPolicyName names the ValidatingAdmissionPolicy (and its
// binding) of deploy/confirm.yaml, which refuses early a confirmation
// whose by is not the writer's own user name, or whose writer may not
// confirm. The controller does not rely on it (ConfirmationProof).
const ConfirmationPolicyName = "fencekit-confirmations"

// ConfirmVerb is the RBAC verb on nodefences that a confirmer needs.
const ConfirmVerb = confirmation.Verb

// RBAC: a person's confirmation is acted on only once the record of who
// made it (a CertificateSigningRequest, whose creator the API server
// wrote) is read, and the API server says that user may confirm.
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// ConfirmationProof proves a person's confirmation before the controller
// acts on it (controller.Controller.ConfirmCheck), from what the API
// server itself recorded, never from an admission policy that was or was
// not in force when the confirmation was written:
//
//   - the confirmation names a CertificateSigningRequest (request) of
//     confirmation.SignerName that names this node, this incident and
//     this reason;
//   - the API server recorded its by as that request's creator;
//   - a SubjectAccessReview for that user (with the groups, uid and extra
//     the API server recorded) allows the verb confirm on this node's
//     NodeFence, now.
//
// A confirmation that fails one of them is refused for good (an error
// wrapping controller.ErrUnproven): written while no policy was in force,
// it stays refused once a policy is applied. An API server that does not
// answer refuses it for now (asked again at the next pass). Nothing is
// cached.
type ConfirmationProof struct {
	// Reader reads the CertificateSigningRequests from the API server
	// (not a cache: a manager's GetAPIReader).
	Reader client.Reader
	// Client creates the SubjectAccessReviews.
	Client client.Client
}

// Check proves c, node's confirmation; see ConfirmationProof.
func (p *ConfirmationProof) Check(ctx context.Context, node string, c flow.Confirmation) error {
	unproven := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: confirm again (kubectl fence confirm %s)", controller.ErrUnproven, fmt.Sprintf(format, args...), node)
	}
	if c.Request == "" {
		return unproven("it names no record of who made it (spec.confirmation.request, which kubectl fence confirm writes)")
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	err := p.Reader.Get(ctx, client.ObjectKey{Name: c.Request}, csr)
	switch {
	case apierrors.IsNotFound(err):
		return unproven("its record, CertificateSigningRequest %s, does not exist", c.Request)
	case err != nil:
		return fmt.Errorf("reading CertificateSigningRequest %s, the record of who made the confirmation: %w", c.Request, err)
	}
	if err := confirmation.Names(csr, confirmation.Claim{Node: node, Incident: c.Incident, Reason: c.Reason}); err != nil {
		return unproven("%s", trimCause(err, confirmation.ErrNotAClaim))
	}
	if csr.Spec.Username != c.By {
		return unproven("the API server recorded %q as the maker of CertificateSigningRequest %s, not %q, whom it names", csr.Spec.Username, c.Request, c.By)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: confirmation.Verb, Group: v1alpha1.Group, Resource: "nodefences", Name: node},
	}}
	if err := p.Client.Create(ctx, sar); err != nil {
		return fmt.Errorf("asking the API server whether %s may confirm: %w", c.By, err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return unproven("user %s may not confirm that node %s is off: that needs the verb confirm on nodefences (ClusterRole fencekit-confirm)", c.By, node)
	}
	return nil
}

// trimCause drops cause's text from the front of err's.
func trimCause(err, cause error) string {
	s := err.Error()
	if errors.Is(err, cause) && len(s) > len(cause.Error())+2 && s[:len(cause.Error())] == cause.Error() {
		return s[len(cause.Error())+2:]
	}
	return s
}
