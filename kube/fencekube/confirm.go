package fencekube

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfirmationPolicyName names the ValidatingAdmissionPolicy (and its
// binding) of deploy/confirm.yaml, which admits a person's confirmation
// (a NodeFence's spec.confirmation) only when its by is the writer's own
// user name and the writer holds the verb confirm on nodefences.
const ConfirmationPolicyName = "fencekit-confirmations"

// ConfirmVerb is the RBAC verb on nodefences that a confirmer needs.
const ConfirmVerb = "confirm"

// RBAC: a person's confirmation is acted on only while the admission
// policy of deploy/confirm.yaml is in force: its policy and binding are
// read before a confirmation is accepted (kept for 30 s).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,resourceNames=fencekit-confirmations,verbs=get

// ConfirmationPolicy checks that the admission policy that proves a
// confirmer's name is in force: its binding exists, denies, and is not
// narrowed to some objects, and its policy fails closed. Without it, anyone
// who may patch a NodeFence could type any name into spec.confirmation.by;
// the controller then refuses every confirmation, saying why
// (controller.Controller.ConfirmCheck). An answer is kept for TTL.
type ConfirmationPolicy struct {
	// Client reads the policy and its binding from the API server.
	Client client.Reader
	// TTL is how long an answer is kept (default 30 s): a confirmation
	// refused because the policy was missing is accepted within it once
	// the policy is applied.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	at     time.Time
	answer error
}

// Check returns nil when the policy is in force, else why not.
func (p *ConfirmationPolicy) Check(ctx context.Context) error {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	p.mu.Lock()
	if !p.at.IsZero() && now().Sub(p.at) < ttl {
		defer p.mu.Unlock()
		return p.answer
	}
	p.mu.Unlock()
	err := p.check(ctx)
	if ctx.Err() != nil {
		return err // not kept: the caller gave up
	}
	p.mu.Lock()
	p.at, p.answer = now(), err
	p.mu.Unlock()
	return err
}

func (p *ConfirmationPolicy) check(ctx context.Context) error {
	notInForce := func(format string, args ...any) error {
		return fmt.Errorf("the admission policy %s that proves who confirms (deploy/confirm.yaml) is not in force: %s",
			ConfirmationPolicyName, fmt.Sprintf(format, args...))
	}
	b := &admissionv1.ValidatingAdmissionPolicyBinding{}
	err := p.Client.Get(ctx, client.ObjectKey{Name: ConfirmationPolicyName}, b)
	switch {
	case apierrors.IsNotFound(err):
		return notInForce("its binding does not exist")
	case err != nil:
		return notInForce("reading its binding: %v", err)
	case b.Spec.PolicyName != ConfirmationPolicyName:
		return notInForce("its binding names policy %q", b.Spec.PolicyName)
	case !slices.Contains(b.Spec.ValidationActions, admissionv1.Deny):
		return notInForce("its binding does not deny (validationActions %v)", b.Spec.ValidationActions)
	case b.Spec.MatchResources != nil && (b.Spec.MatchResources.ObjectSelector != nil && len(b.Spec.MatchResources.ObjectSelector.MatchLabels)+len(b.Spec.MatchResources.ObjectSelector.MatchExpressions) > 0 ||
		len(b.Spec.MatchResources.ResourceRules) > 0 || len(b.Spec.MatchResources.ExcludeResourceRules) > 0):
		return notInForce("its binding is narrowed to some objects")
	case b.Spec.ParamRef != nil:
		return notInForce("its binding takes parameters")
	}
	pol := &admissionv1.ValidatingAdmissionPolicy{}
	err = p.Client.Get(ctx, client.ObjectKey{Name: ConfirmationPolicyName}, pol)
	switch {
	case apierrors.IsNotFound(err):
		return notInForce("the policy does not exist")
	case err != nil:
		return notInForce("reading it: %v", err)
	case pol.Spec.FailurePolicy != nil && *pol.Spec.FailurePolicy != admissionv1.Fail:
		return notInForce("its failurePolicy is %s, not Fail", *pol.Spec.FailurePolicy)
	case len(pol.Spec.Validations) < 2:
		return notInForce("it has %d validations, not the two of deploy/confirm.yaml", len(pol.Spec.Validations))
	}
	return nil
}
