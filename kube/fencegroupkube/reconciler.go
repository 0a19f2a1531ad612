package fencegroupkube

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/fencekit/fencekit/fencegroup"
)

// Reconciler keeps one Ceph cluster's fence group in Kubernetes: the
// fence-group labels on the machines and the budget in the budget objects,
// from the cluster's health (shared with the gate).
type Reconciler struct {
	// Cluster names the Ceph cluster (see fencegroup.ValidateCluster).
	Cluster string
	// Health gives the cluster's snapshots, such as a *fencegroup.Health
	// whose Run the application starts.
	Health fencegroup.Snapshotter
	// Machines lists and labels the machines; nil means no labels are kept.
	Machines MachineStore
	// Budgets are written the budget; empty means none.
	Budgets []BudgetWriter
	// Rules are the budget and membership rules; the gate must use the
	// same.
	Rules fencegroup.Rules
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives what was changed (info) and what failed (warn). Nil
	// means no logging.
	Logger *slog.Logger
}

// Result is what one Reconcile saw and did.
type Result struct {
	// Snapshot is the health the pass worked from.
	Snapshot fencegroup.Snapshot
	// Budget is the budget written.
	Budget fencegroup.Budget
	// Plan is the label plan, zero when no placement was known.
	Plan fencegroup.LabelPlan
	// Applied are the label changes made.
	Applied []fencegroup.LabelChange
	// Held are the label removals not made because the health is stale:
	// a label is only ever removed on a fresh placement.
	Held []fencegroup.LabelChange
}

// Reconcile makes one pass, in the order that keeps the group protected
// while it changes:
//
//  1. a budget of 0 is written first, so that it closes at once;
//  2. labels are added (new members come under the budget);
//  3. labels are removed, only when the health is not stale;
//  4. a budget of 1 is written last.
//
// The budget is Snapshot.Budget: 0 when the health is stale or not read
// yet. Labels are left as they are when the status has no placement. A
// failed step does not stop the later ones (each protects on its own); the
// errors are joined.
func (r *Reconciler) Reconcile(ctx context.Context) (Result, error) {
	if err := fencegroup.ValidateCluster(r.Cluster); err != nil {
		return Result{}, err
	}
	if r.Health == nil {
		return Result{}, errors.New("fencegroupkube: Reconciler has no Health")
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("cluster", r.Cluster)

	res := Result{Snapshot: r.Health.At(now())}
	res.Budget = res.Snapshot.Budget(r.Rules)
	var errs []error
	writeBudgets := func() {
		for _, w := range r.Budgets {
			if err := w.WriteBudget(ctx, r.Cluster, res.Budget); err != nil {
				log.Warn("fencegroupkube: writing the budget failed", "error", err)
				errs = append(errs, err)
			}
		}
	}
	if res.Budget.MaxUnavailable == 0 {
		writeBudgets()
	}
	if r.Machines != nil && res.Snapshot.Status != nil && res.Snapshot.Status.Placement != nil {
		if err := r.labels(ctx, log, &res); err != nil {
			errs = append(errs, err)
		}
	}
	if res.Budget.MaxUnavailable > 0 {
		writeBudgets()
	}
	return res, errors.Join(errs...)
}

// labels computes and applies the label plan: additions, then removals
// unless the health is stale.
func (r *Reconciler) labels(ctx context.Context, log *slog.Logger, res *Result) error {
	machines, err := r.Machines.List(ctx)
	if err != nil {
		log.Warn("fencegroupkube: listing the machines failed", "error", err)
		return err
	}
	plan, err := r.Rules.Labels(r.Cluster, res.Snapshot.Status.Placement, machines)
	if err != nil {
		return err
	}
	res.Plan = plan
	if len(plan.UnmatchedHosts) > 0 {
		log.Debug("fencegroupkube: OSD hosts match no machine", "hosts", plan.UnmatchedHosts)
	}
	var errs []error
	for _, c := range plan.Changes {
		if !c.Add && res.Snapshot.Stale {
			res.Held = append(res.Held, c)
			continue
		}
		if err := r.Machines.SetLabel(ctx, c.Machine, c.Key, c.Add); err != nil {
			log.Warn("fencegroupkube: label change failed", "change", c.String(), "error", err)
			errs = append(errs, err)
			continue
		}
		log.Info("fencegroupkube: label changed", "change", c.String())
		res.Applied = append(res.Applied, c)
	}
	if len(res.Held) > 0 {
		log.Info("fencegroupkube: label removals held while the Ceph health is stale", "held", len(res.Held))
	}
	return errors.Join(errs...)
}

// Run reconciles at once and then every interval (the health's refresh
// interval is a good one) until ctx ends; it returns ctx's error. Failed
// passes are logged and tried again at the next tick. The health's own
// Run must be started beside it.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return errors.New("fencegroupkube: Run needs a positive interval")
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := r.Reconcile(ctx); err != nil && ctx.Err() == nil && r.Logger != nil {
			r.Logger.Warn("fencegroupkube: reconcile failed", "cluster", r.Cluster, "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
