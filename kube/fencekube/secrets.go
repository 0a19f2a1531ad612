package fencekube

import (
	"context"
	"fmt"

	"github.com/fencekit/fencekit/fence/config"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Secrets gives the values of the Secrets of one namespace (the
// controller's) from an informer: the credentials a fence configuration
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
	client    kubernetes.Interface
	namespace string
	runner    runner
}

// NewSecrets returns the Secrets of namespace.
func NewSecrets(client kubernetes.Interface, namespace string) *Secrets {
	return &Secrets{client: client, namespace: namespace}
}

// Start starts the Secret informer of the namespace. It runs until ctx
// ends or Stop is called. Calling it again does nothing.
func (s *Secrets) Start(ctx context.Context) {
	s.runner.start(ctx, func(inf Informer) (Informer, syncer) {
		if inf != nil {
			return inf, inf
		}
		secrets := s.client.CoreV1().Secrets(s.namespace)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return secrets.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return secrets.Watch(ctx, o)
			},
		}
		own := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, s.client), &corev1.Secret{}, 0, cache.Indexers{})
		_ = own.SetTransform(StripSecret)
		return own, own
	})
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

// UseInformer has s read the Secrets from inf, a Secret informer its owner
// runs (a controller-runtime manager's cache), instead of starting its
// own; Start then starts nothing, and Stop leaves it running. StripSecret
// is a transform for it. Call it before Start.
func (s *Secrets) UseInformer(inf cache.SharedIndexInformer) { s.runner.use(inf, inf.GetStore()) }

// UseCache is UseInformer for an informer that gives its objects through
// items rather than a Store (a controller-runtime cache's, whose informer
// of a few namespaces has none). Call it before Start.
func (s *Secrets) UseCache(inf Informer, items Lister) { s.runner.use(inf, items) }

// HasSynced reports whether the informer has synced.
func (s *Secrets) HasSynced() bool { return s.runner.hasSynced() }

// WaitForSync waits until the informer has synced or ctx ends.
func (s *Secrets) WaitForSync(ctx context.Context) error { return s.runner.waitForSync(ctx) }

// Stop stops the informer and waits for it.
func (s *Secrets) Stop() { s.runner.stop() }

// SecretValue returns the value of key ref.Key of the Secret ref.Name. A
// Secret or a key that does not exist is an *Error wrapping
// config.ErrSecretNotFound, naming the Secret and the key, never a value.
// Before Start, or before the informer has synced, the Secret is read from
// the API server.
func (s *Secrets) SecretValue(ctx context.Context, ref config.SecretRef) (string, error) {
	name := s.namespace + "/" + ref.Name
	var sec *corev1.Secret
	if inf := s.runner.informer(); inf != nil {
		obj, ok, err := inf.GetByKey(name)
		if err != nil {
			return "", &Error{Kind: "Secret", Name: name, Op: OpSecret, Err: err}
		}
		if ok {
			sec, _ = obj.(*corev1.Secret)
		}
	} else {
		got, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", &Error{Kind: "Secret", Name: name, Op: OpSecret, Err: err}
		default:
			sec = got
		}
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
