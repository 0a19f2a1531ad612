package fencectrl

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fencekit/fencekit/internal/kubeobj"
	"github.com/fencekit/fencekit/kube/fencegroupkube"
	"github.com/fencekit/fencekit/kube/rebootkube"
)

// RebootReconciler runs the metal3 reboot reconciler
// (kube/rebootkube.Reconciler) as a controller-runtime reconciler of the
// host objects of GVK (BareMetalHost, or any object with the reboot
// annotations), one reconcile per host, MaxConcurrentReconciles at once.
// A reconcile that decided something is requeued at once, as
// rebootkube.Reconciler asks (until it decides nothing); one whose object
// changed under it (ErrConflict) too.
//
// It plays the baremetal-operator's part for the reboot annotations: never
// run it beside a baremetal-operator that manages the same hosts.
type RebootReconciler struct {
	Reconciler *rebootkube.Reconciler
	// GVK is the kind of the host objects, such as
	// metal3.io/v1alpha1 BareMetalHost.
	GVK schema.GroupVersionKind
	// MaxConcurrentReconciles bounds the hosts reconciled at once (1 when
	// zero).
	MaxConcurrentReconciles int
	// Poll is when a host whose last decision was to wait is looked at
	// again (30 s when zero): a pending power change reads the device's
	// state again.
	Poll time.Duration
}

// Reconcile reconciles the host req names.
func (r *RebootReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	d, err := r.Reconciler.Reconcile(ctx, req.Namespace, req.Name)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil // gone
	case errors.Is(err, rebootkube.ErrConflict):
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil // again at once, as the reconciler asks
	case err != nil:
		return reconcile.Result{}, err
	case !d.Nothing():
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	}
	poll := r.Poll
	if poll <= 0 {
		poll = 30 * time.Second
	}
	return reconcile.Result{RequeueAfter: poll}, nil
}

// SetupWithManager adds the reconciler to mgr, watching the host objects
// on the manager's cache (as unstructured objects of GVK). options tune the
// controller; its MaxConcurrentReconciles, when zero, is the
// RebootReconciler's.
func (r *RebootReconciler) SetupWithManager(_ context.Context, mgr manager.Manager, options crcontroller.Options) error {
	u := kubeobj.Object(r.GVK, "", "")
	if options.MaxConcurrentReconciles <= 0 {
		options.MaxConcurrentReconciles = max(r.MaxConcurrentReconciles, 1)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("fencekit-reboot-" + r.GVK.Kind).
		For(u).
		WithOptions(options).
		Complete(r)
}

// FenceGroupRunnable returns the Ceph fence-group labeler
// (kube/fencegroupkube.Reconciler) as a manager.Runnable that runs on the
// leader only, reconciling every interval (its Run).
func FenceGroupRunnable(r *fencegroupkube.Reconciler, interval time.Duration) manager.Runnable {
	return leaderRunnable(func(ctx context.Context) error {
		err := r.Run(ctx, interval)
		if ctx.Err() != nil {
			return nil
		}
		return err
	})
}
