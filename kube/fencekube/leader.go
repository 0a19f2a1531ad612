package fencekube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeadershipLost reports that RunLeader lost its lease while its
// context was still live: run's context was cancelled. Check it with
// errors.Is; a controller usually exits and starts again.
var ErrLeadershipLost = errors.New("leadership lost")

// LeaderOptions configure RunLeader. Namespace and Name are required.
type LeaderOptions struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity names this candidate (the host name with a random suffix
	// when empty).
	Identity string
	// LeaseDuration (15 s), RenewDeadline (10 s) and RetryPeriod (2 s) are
	// client-go's leader election timings; LeaseDuration must exceed
	// RenewDeadline, which must exceed 1.2 RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnNewLeader, when set, is called with the identity of every new
	// leader observed, from client-go's goroutines (possibly after
	// RunLeader returned).
	OnNewLeader func(identity string)
	// Logger receives a line when leading starts and stops (discarded
	// when nil).
	Logger *slog.Logger
}

// RunLeader runs run while this candidate holds the Lease
// Namespace/Name, with client-go's leaderelection. It waits to be elected,
// calls run with a context that is cancelled when ctx ends or the lease is
// lost, and once run has returned releases the lease. It returns nil when
// run returned on its own, ctx's error when ctx ended, an *Error (OpLeader)
// wrapping ErrLeadershipLost when the lease was lost, and an *Error for bad
// options.
//
// A lease is not fencing: between the loss of a lease and the moment run
// notices, two candidates may act. That is why the Store's optimistic
// concurrency, not the lease, is what keeps two controllers from fencing a
// node twice; the lease only keeps them from doing the same work.
func RunLeader(ctx context.Context, client kubernetes.Interface, opts LeaderOptions, run func(ctx context.Context)) error {
	fail := func(field string, err error) error {
		return &Error{Kind: "Lease", Name: opts.Namespace + "/" + opts.Name, Op: OpLeader, Field: field, Err: err}
	}
	if opts.Namespace == "" || opts.Name == "" {
		return fail("Namespace,Name", errors.New("the lease's namespace and name are required"))
	}
	if run == nil {
		return fail("run", errors.New("nil run"))
	}
	if opts.Identity == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		opts.Identity = host + "_" + hex.EncodeToString(b[:])
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.RenewDeadline == 0 {
		opts.RenewDeadline = 10 * time.Second
	}
	if opts.RetryPeriod == 0 {
		opts.RetryPeriod = 2 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	started := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.Name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
		},
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { started <- lctx },
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if opts.OnNewLeader != nil {
					opts.OnNewLeader(id)
				}
			},
		},
	})
	if err != nil {
		return fail("", err)
	}

	// The elector runs on a context of its own, cancelled only once run
	// has returned: the lease is released (ReleaseOnCancel) only when
	// nothing it guards runs any more.
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	electDone := make(chan struct{})
	go func() {
		defer close(electDone)
		le.Run(electCtx)
	}()

	select {
	case <-ctx.Done():
		stopElect()
		<-electDone
		return ctx.Err()
	case <-electDone:
		// The elector ends without leading only when its context ends.
		return ctx.Err()
	case lctx := <-started:
		logger.Info("leading", "lease", opts.Namespace+"/"+opts.Name, "identity", opts.Identity)
		runCtx, cancelRun := context.WithCancel(ctx)
		stop := context.AfterFunc(lctx, cancelRun)
		run(runCtx)
		stop()
		cancelRun()
		lost := lctx.Err() != nil
		stopElect()
		<-electDone
		logger.Info("stopped leading", "lease", opts.Namespace+"/"+opts.Name, "identity", opts.Identity, "lost", lost && ctx.Err() == nil)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case lost:
			return fail("", ErrLeadershipLost)
		}
		return nil
	}
}
