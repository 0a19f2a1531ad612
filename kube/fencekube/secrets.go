package fencekube

import (
	"context"
	"fmt"

	"github.com/fencekit/fencekit/fence/config"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RBAC, in the controller's namespace: the Secrets that methods name
// instead of holding their credentials (password_secret=NAME/KEY), read
// from the cache, never logged or copied into a NodeFence. Without this
// rule, run the controller with --secrets=false.
// +kubebuilder:rbac:groups="",namespace=fencekit-system,resources=secrets,verbs=get;list;watch

// Secrets gives the values of the Secrets of one namespace (the
// controller's): the credentials a fence configuration
// names instead of holding them (password_secret=NAME/KEY, see
// config.SecretSuffix). It implements config.SecretSource; give it to a
// ConfigSource (ConfigOptions.Secrets) and every method opened from its
// configurations reads its credentials here, as they are at that moment:
// a rotated Secret is used from the next device opened on.
//
// The values are read only to be handed to a driver: Secrets never logs
// them, never puts them in an error, and the NodeFence record never holds
// them (it holds the method's name and results, not its parameters). The
// controller needs get, list and watch on Secrets in its own namespace
// only (deploy/rbac.yaml's Role).
type Secrets struct {
	client    client.Reader
	namespace string
}

// NewSecrets returns the Secrets of namespace, which c reads: a
// controller-runtime manager's client reads them from its cache (kept to
// the namespace, StripSecret as the transform: kube/fencectrl's
// CacheOptions), an uncached client from the API server.
func NewSecrets(c client.Reader, namespace string) *Secrets {
	return &Secrets{client: c, namespace: namespace}
}

// StripSecret keeps of a Secret its name and data: not its annotations
// (kubectl apply's last-applied-configuration holds the whole Secret
// again), not its managed fields.
func StripSecret(obj any) (any, error) {
	if sec, ok := obj.(*corev1.Secret); ok {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Name: sec.Name, Namespace: sec.Namespace, UID: sec.UID, ResourceVersion: sec.ResourceVersion,
		}, Data: sec.Data}, nil
	}
	return obj, nil
}

// SecretValue returns the value of key ref.Key of the Secret ref.Name. A
// Secret or a key that does not exist is an *Error wrapping
// config.ErrSecretNotFound, naming the Secret and the key, never a value.
func (s *Secrets) SecretValue(ctx context.Context, ref config.SecretRef) (string, error) {
	name := s.namespace + "/" + ref.Name
	var sec *corev1.Secret
	got := &corev1.Secret{}
	switch err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: ref.Name}, got); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", &Error{Kind: "Secret", Name: name, Op: OpSecret, Err: err}
	default:
		sec = got
	}
	if sec == nil {
		return "", &Error{Kind: "Secret", Name: name, Op: OpSecret, Err: config.ErrSecretNotFound}
	}
	v, ok := sec.Data[ref.Key]
	if !ok {
		return "", &Error{Kind: "Secret", Name: name, Op: OpSecret, Err: fmt.Errorf("no key %q: %w", ref.Key, config.ErrSecretNotFound)}
	}
	return string(v), nil
}

var _ config.SecretSource = (*Secrets)(nil)
