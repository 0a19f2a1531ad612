package teardown

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// run is one step of one run.
type run struct {
	x        *Executor
	p        *Plan
	s        Step
	start    time.Time
	deadline time.Time // start + timeout, on the executor's clock
}

// result is what a step returns beside its error.
type result struct {
	outcome Outcome
	message string
	details []Message
}

func done(format string, args ...any) result {
	return result{outcome: Done, message: fmt.Sprintf(format, args...)}
}

func skipped(format string, args ...any) result {
	return result{outcome: Skipped, message: fmt.Sprintf(format, args...)}
}

// do runs the step.
func (r *run) do(ctx context.Context) (result, error) {
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	switch r.s.Kind {
	case StepDrain:
		return r.drain(ctx)
	case StepClearLabels:
		return r.clearLabels(ctx)
	case StepRemoveEtcd:
		return r.removeEtcd(ctx)
	case StepEtcdReady:
		return r.etcdReady(ctx)
	case StepShutdownKubelet:
		return r.shutdownKubelet(ctx)
	case StepDestroyNode:
		return r.destroyNode(ctx)
	case StepPowerOff:
		return r.powerOff(ctx)
	case StepReleaseNode:
		return r.releaseNode(ctx)
	case StepRemoveFromCluster:
		return r.removeFromCluster(ctx)
	}
	return result{}, fmt.Errorf("unknown step %v", r.s.Kind)
}

// permanent marks an error that waiting will not mend.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// wait calls check at once, then every interval, until it reports done,
// returns a permanent error, the step's deadline passes on the executor's
// clock, or ctx ends. A non-nil error from check says why it is not done
// yet; the last one ends up in the returned error, which wraps
// ErrNotConfirmed on a timeout. It makes at most timeout/interval+2 checks.
func (r *run) wait(ctx context.Context, interval time.Duration, check func(context.Context) (bool, error)) error {
	limit := int(r.s.Timeout/interval) + 2
	var last error
	for i := 1; ; i++ {
		ok, err := check(ctx)
		if err == nil && ok {
			return nil
		}
		if pe, isPerm := err.(permanent); isPerm {
			return pe.error
		}
		if err != nil && (last == nil || ctx.Err() == nil) {
			// A check cut short by the deadline says less than the one before.
			last = err
		}
		left := r.deadline.Sub(r.x.now())
		if left <= 0 || i >= limit || ctx.Err() != nil {
			base := fmt.Errorf("%w: not done within %v (%d checks)", ErrNotConfirmed, r.s.Timeout, i)
			if last != nil {
				return fmt.Errorf("%w: %w", base, last)
			}
			return base
		}
		if err := r.x.sleep(ctx, min(interval, left)); err != nil {
			if last != nil {
				return fmt.Errorf("%w: %w", err, last)
			}
			return err
		}
	}
}

// gone reports whether err says the node is not in the cluster.
func gone(err error) bool { return errors.Is(err, ErrNodeNotFound) }

// cluster returns the Cluster port or an error.
func (r *run) cluster() (Cluster, error) {
	if r.x.Cluster == nil {
		return nil, fmt.Errorf("no cluster: %w", ErrNotConfigured)
	}
	return r.x.Cluster, nil
}

// podsLeft returns the pods a drain must remove: neither DaemonSet nor
// mirror pods, nor finished ones. Terminating pods count: they are still
// there.
func podsLeft(pods []Pod) []Pod {
	var out []Pod
	for _, p := range pods {
		if !p.DaemonSet && !p.Mirror && !p.Finished {
			out = append(out, p)
		}
	}
	return out
}

// readNode reads the run's node through the cluster port. When the node is
// gone, n is nil and res is the step's result, skipped with whenGone (a
// format of the node's name); when the read fails, n is nil and err says
// so.
func (r *run) readNode(ctx context.Context, whenGone string) (c Cluster, n *Node, res result, err error) {
	c, err = r.cluster()
	if err != nil {
		return nil, nil, result{}, err
	}
	n, err = c.Node(ctx, r.p.Node)
	if gone(err) {
		return c, nil, skipped(whenGone, r.p.Node), nil
	}
	if err != nil {
		return nil, nil, result{}, fmt.Errorf("read the node: %w", err)
	}
	if n == nil {
		// A port that answers neither a node nor an error: no step is
		// taken as done, or skipped, on nothing.
		return nil, nil, result{}, errors.New("read the node: the cluster returned no node and no error")
	}
	return c, n, result{}, nil
}

// podNames lists up to five pods as namespace/name.
func podNames(pods []Pod) string {
	var names []string
	for i, p := range pods {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(pods)-5))
			break
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return strings.Join(names, ", ")
}

// drain cordons the node and evicts its pods, then checks that it is
// cordoned and that no pod a drain removes is left.
func (r *run) drain(ctx context.Context) (result, error) {
	c, n, res, err := r.readNode(ctx, "node %s is no longer in the cluster: nothing to drain")
	if n == nil {
		return res, err
	}
	node := r.p.Node
	pods, err := c.Pods(ctx, node)
	if err != nil && !gone(err) {
		return result{}, fmt.Errorf("list the pods: %w", err)
	}
	before := podsLeft(pods)
	if n.Unschedulable && len(before) == 0 {
		return skipped("already cordoned and drained"), nil
	}
	opts := DrainOptions{Timeout: r.s.Timeout, GracePeriod: r.p.Request.Timeouts.DrainGracePeriod,
		Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true}
	err = c.Drain(ctx, node, opts, func(dp DrainProgress) {
		now := r.x.now()
		r.x.emit(StepEvent{Node: node, Step: StepDrain, Type: EventProgress, Message: dp.Message, Drain: &dp,
			Time: now, Duration: now.Sub(r.start)})
	})
	if gone(err) {
		return skipped("node %s left the cluster during the drain", node), nil
	}
	if err != nil {
		return result{}, err
	}
	n, err = c.Node(ctx, node)
	if gone(err) {
		return skipped("node %s left the cluster during the drain", node), nil
	}
	if err != nil {
		return result{}, fmt.Errorf("confirm the drain: read the node: %w", err)
	}
	if !n.Unschedulable {
		return result{}, fmt.Errorf("%w: the drain returned but the node is not cordoned", ErrNotConfirmed)
	}
	pods, err = c.Pods(ctx, node)
	if err != nil && !gone(err) {
		return result{}, fmt.Errorf("confirm the drain: list the pods: %w", err)
	}
	if left := podsLeft(pods); len(left) > 0 {
		return result{}, fmt.Errorf("%w: the drain returned but %s still on the node: %s", ErrNotConfirmed, plural(len(left), "pod"), podNames(left))
	}
	return done("cordoned; %s evicted or deleted", plural(len(before), "pod")), nil
}

// clearLabels removes the labels ClearableLabels names and waits until they
// are gone and no pod on the node is terminating.
func (r *run) clearLabels(ctx context.Context) (result, error) {
	c, n, res, err := r.readNode(ctx, "node %s is no longer in the cluster: no label to clear")
	if n == nil {
		return res, err
	}
	node := r.p.Node
	keys := ClearableLabels(n.Labels, r.p.Request.Labels)
	if len(keys) > 0 {
		change := make(map[string]*string, len(keys))
		for _, k := range keys {
			change[k] = nil
		}
		err := c.SetLabels(ctx, node, change)
		if gone(err) {
			return skipped("node %s left the cluster: no label to clear", node), nil
		}
		if err != nil {
			return result{}, fmt.Errorf("remove the labels %s: %w", strings.Join(keys, ", "), err)
		}
	}
	left := false
	err = r.wait(ctx, r.x.poll(), func(ctx context.Context) (bool, error) {
		n, err := c.Node(ctx, node)
		if gone(err) {
			left = true
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read the node: %w", err)
		}
		if still := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, ok := n.Labels[k]; return !ok }); len(still) > 0 {
			return false, fmt.Errorf("labels %s still on the node", strings.Join(still, ", "))
		}
		pods, err := c.Pods(ctx, node)
		if err != nil && !gone(err) {
			return false, fmt.Errorf("list the pods: %w", err)
		}
		var terminating []Pod
		for _, p := range pods {
			if p.Terminating {
				terminating = append(terminating, p)
			}
		}
		if len(terminating) > 0 {
			return false, fmt.Errorf("%s still terminating: %s", plural(len(terminating), "pod"), podNames(terminating))
		}
		return true, nil
	})
	switch {
	case err != nil:
		return result{}, fmt.Errorf("pods did not settle: %w", err)
	case left:
		return skipped("node %s left the cluster", node), nil
	case len(keys) == 0:
		return skipped("no label to remove; no pod terminating"), nil
	}
	return done("removed the labels %s; no pod terminating", strings.Join(keys, ", ")), nil
}

// onNode reports whether an etcd member is on the plan's node.
func (r *run) onNode(m Member) bool { return MemberOnNode(m, r.p.Node, r.p.Addresses) }

// removeEtcd removes the node's members from every etcd cluster, in the
// order of the clusters' names, retrying every EtcdPoll until the step's
// timeout while a removal would break a quorum or a cluster does not
// answer. Removing the last member of a cluster is refused at once.
func (r *run) removeEtcd(ctx context.Context) (result, error) {
	if len(r.x.Etcd) == 0 {
		return skipped("no etcd cluster configured"), nil
	}
	var removed, none []string
	for _, name := range r.x.etcdNames() {
		e := r.x.Etcd[name]
		n := len(removed)
		tried := map[uint64]string{}
		err := r.wait(ctx, r.x.etcdPoll(), func(ctx context.Context) (bool, error) {
			return r.removeFrom(ctx, name, e, tried, &removed)
		})
		if err != nil {
			if len(removed) > 0 {
				return result{}, fmt.Errorf("etcd cluster %s (after removing %s): %w", name, strings.Join(removed, ", "), err)
			}
			return result{}, fmt.Errorf("etcd cluster %s: %w", name, err)
		}
		if len(removed) == n {
			none = append(none, name)
		}
	}
	if len(removed) == 0 {
		return skipped("no etcd member on node %s in %s", r.p.Node, strings.Join(none, ", ")), nil
	}
	msg := "removed " + strings.Join(removed, ", ")
	if len(none) > 0 {
		msg += "; no member in " + strings.Join(none, ", ")
	}
	return done("%s", msg), nil
}

// removeFrom is one attempt at removing the node's members from one
// cluster; it reports done once none is listed. tried holds the members
// whose removal returned an error: the removal may still have happened (a
// member asked to remove itself may stop before it answers), so a later
// attempt that finds one gone counts it removed.
func (r *run) removeFrom(ctx context.Context, cluster string, e Etcd, tried map[uint64]string, removed *[]string) (bool, error) {
	members, err := r.x.etcdMembers(ctx, e)
	if err != nil {
		return false, fmt.Errorf("list the members: %w", err)
	}
	for id, what := range tried {
		if !slices.ContainsFunc(members, func(m Member) bool { return m.ID == id }) {
			*removed = append(*removed, what)
			delete(tried, id)
		}
	}
	var on []Member
	for _, m := range members {
		if r.onNode(m) {
			on = append(on, m)
		}
	}
	if len(on) == 0 {
		return true, nil
	}
	health := r.x.healthOf(ctx, e, slices.DeleteFunc(slices.Clone(members), func(m Member) bool { return m.IsLearner || r.onNode(m) }))
	healthy := func(m Member) bool {
		err, ok := health[m.ID]
		return ok && err == nil
	}
	for _, m := range on {
		if !m.IsLearner {
			q := CheckQuorum(members, m.ID, r.onNode, healthy)
			if !q.OK() {
				err := fmt.Errorf("%w: member %s (id %x): %s", ErrQuorum, memberName(m), m.ID, q)
				if q.Remaining == 0 {
					return false, permanent{fmt.Errorf("%w: it is the cluster's last voting member", err)}
				}
				return false, err
			}
		}
		what := fmt.Sprintf("%s/%s (id %x)", cluster, memberName(m), m.ID)
		if err := r.removeMember(ctx, e, m); err != nil && !errors.Is(err, ErrMemberNotFound) {
			tried[m.ID] = what
			return false, fmt.Errorf("remove member %s (id %x): %w", memberName(m), m.ID, err)
		}
		delete(tried, m.ID)
		*removed = append(*removed, what)
		members = slices.DeleteFunc(members, func(o Member) bool { return o.ID == m.ID })
	}
	members, err = r.x.etcdMembers(ctx, e)
	if err != nil {
		return false, fmt.Errorf("confirm the removal: list the members: %w", err)
	}
	for _, m := range members {
		if r.onNode(m) {
			return false, fmt.Errorf("%w: member %s (id %x) still listed after its removal", ErrNotConfirmed, memberName(m), m.ID)
		}
	}
	return true, nil
}

func (r *run) removeMember(ctx context.Context, e Etcd, m Member) error {
	cctx, cancel := context.WithTimeout(ctx, r.x.etcdCallTimeout())
	defer cancel()
	return e.RemoveMember(cctx, m.ID)
}

// etcdReady polls every EtcdPoll until, in every cluster, the members not
// on the node are healthy: at least EtcdMinHealthy of them (default all),
// and a majority of the voting ones.
func (r *run) etcdReady(ctx context.Context) (result, error) {
	if len(r.x.Etcd) == 0 {
		return skipped("no etcd cluster configured"), nil
	}
	var details []Message
	var summary []string
	err := r.wait(ctx, r.x.etcdPoll(), func(ctx context.Context) (bool, error) {
		details, summary = details[:0], summary[:0]
		var problems []string
		for _, name := range r.x.etcdNames() {
			e := r.x.Etcd[name]
			members, err := r.x.etcdMembers(ctx, e)
			if err != nil {
				details = append(details, Message{Message: "Unable to access Etcd: " + err.Error(), Error: true, Kind: KindHealth, Name: name})
				problems = append(problems, fmt.Sprintf("cluster %s: %v", name, err))
				continue
			}
			members = slices.DeleteFunc(members, r.onNode)
			health := r.x.healthOf(ctx, e, members)
			var all, healthy, voters, healthyVoters int
			for _, m := range members {
				err := health[m.ID]
				details = append(details, healthMessage(name, m, err))
				all++
				if !m.IsLearner {
					voters++
				}
				if err == nil {
					healthy++
					if !m.IsLearner {
						healthyVoters++
					}
				}
			}
			need := r.x.EtcdMinHealthy[name]
			if need <= 0 {
				need = all
			}
			switch {
			case voters == 0:
				problems = append(problems, fmt.Sprintf("cluster %s: no voting member but on node %s", name, r.p.Node))
			case healthy < need || 2*healthyVoters <= voters:
				problems = append(problems, fmt.Sprintf("cluster %s: %d of %d members healthy (%d needed), %d of %d voting members", name, healthy, all, need, healthyVoters, voters))
			}
			summary = append(summary, fmt.Sprintf("%s %d/%d", name, healthy, all))
		}
		if len(problems) > 0 {
			return false, errors.New(strings.Join(problems, "; "))
		}
		return true, nil
	})
	res := result{details: slices.Clone(details)}
	if err != nil {
		return res, fmt.Errorf("etcd not healthy: %w", err)
	}
	res.outcome = Done
	res.message = "healthy members, not counting node " + r.p.Node + ": " + strings.Join(summary, ", ")
	return res, nil
}

// beat is what a live kubelet keeps changing.
type beat struct{ lease, heartbeat time.Time }

// shutdownKubelet sets the decommission label and waits until the node's
// Lease and heartbeat have not changed for KubeletStale.
func (r *run) shutdownKubelet(ctx context.Context) (result, error) {
	c, n, res, err := r.readNode(ctx, "node %s is no longer in the cluster")
	if n == nil {
		return res, err
	}
	node := r.p.Node
	already := n.Labels[DecommissionLabel] == DecommissionValue
	if !already {
		v := DecommissionValue
		err := c.SetLabels(ctx, node, map[string]*string{DecommissionLabel: &v})
		if gone(err) {
			return skipped("node %s left the cluster", node), nil
		}
		if err != nil {
			return result{}, fmt.Errorf("set the label %s=%s: %w", DecommissionLabel, DecommissionValue, err)
		}
	}
	last, since := beat{n.LeaseRenewed, n.LastHeartbeat}, r.x.now()
	var window time.Duration
	err = r.wait(ctx, r.x.poll(), func(ctx context.Context) (bool, error) {
		n, err := c.Node(ctx, node)
		if gone(err) {
			return false, permanent{fmt.Errorf("%w: the node was deleted while its kubelet was awaited", ErrNotConfirmed)}
		}
		if err != nil {
			return false, fmt.Errorf("read the node: %w", err)
		}
		now := r.x.now()
		if b := (beat{n.LeaseRenewed, n.LastHeartbeat}); b != last {
			last, since = b, now
		}
		window = r.x.kubeletStale()
		if n.LeaseRenewed.IsZero() {
			window = max(window, NoLeaseKubeletStale)
		}
		if quiet := now.Sub(since); quiet < window {
			return false, fmt.Errorf("the kubelet reported %v ago (stopped after %v without a report)", quiet.Round(time.Second), window)
		}
		return true, nil
	})
	if err != nil {
		return result{}, fmt.Errorf("kubelet not seen to stop: %w", err)
	}
	if already {
		return skipped("%s=%s already set; the kubelet has not reported for %v", DecommissionLabel, DecommissionValue, window), nil
	}
	return done("labelled %s=%s; the kubelet has not reported for %v", DecommissionLabel, DecommissionValue, window), nil
}

// destroyNode has the provisioner wipe and release the node.
func (r *run) destroyNode(ctx context.Context) (result, error) {
	if r.x.Provisioner == nil {
		return result{}, fmt.Errorf("no provisioner: %w", ErrNotConfigured)
	}
	wipe, what := WipeAll, "every local disk"
	if r.p.Request.PreserveLocalStorage {
		wipe, what = WipeOSDisk, "the OS disk only (local storage preserved)"
	}
	opts := DestroyOptions{Wipe: wipe, Revision: r.p.Revision}
	if err := r.x.Provisioner.Destroy(ctx, r.p.Node, opts); err != nil {
		return result{}, fmt.Errorf("destroy (wipe %s): %w", what, err)
	}
	if r.p.Revision != 0 {
		return done("wiped %s for design revision %d", what, r.p.Revision), nil
	}
	return done("wiped %s", what), nil
}

// releaseNode removes the node from the provisioner. In a whole plan it
// runs after power-off, which stops the plan unless a device confirmed the
// node off; in a plan cut without power-off, it powers the node off itself
// first (an already-off node is confirmed, not cycled), so that a server is
// never released while it may run.
func (r *run) releaseNode(ctx context.Context) (result, error) {
	if r.x.Provisioner == nil {
		return result{}, fmt.Errorf("no provisioner: %w", ErrNotConfigured)
	}
	off := ""
	if !slices.ContainsFunc(r.p.Steps, func(s Step) bool { return s.Kind == StepPowerOff }) {
		res, err := r.powerOff(ctx)
		if err != nil {
			return result{}, fmt.Errorf("not released: %w", err)
		}
		off = " (" + res.message + ")"
	}
	if err := r.x.Provisioner.Release(ctx, r.p.Node); err != nil {
		return result{}, fmt.Errorf("release from the provisioner: %w", err)
	}
	return done("released from the provisioner%s", off), nil
}

// powerOff powers the node off through its fence levels and requires a
// device-confirmed off.
func (r *run) powerOff(ctx context.Context) (result, error) {
	if r.x.Power == nil {
		return result{}, fmt.Errorf("no fence levels: %w", ErrNotConfigured)
	}
	levels, err := r.x.Power(ctx, r.p.Node)
	if err != nil {
		return result{}, fmt.Errorf("fence levels: %w", err)
	}
	res, err := fence.DoLevels(ctx, r.p.Node, levels, fence.ActionOff)
	if err != nil {
		return result{}, fmt.Errorf("power off: %w", err)
	}
	if res == nil || !res.Fenced || res.Level < 0 || res.Level >= len(res.Levels) {
		return result{}, fmt.Errorf("%w: no device confirmed the node off", ErrNotConfirmed)
	}
	var by []string
	already := true
	for _, mr := range res.Levels[res.Level].Results {
		if mr == nil {
			continue
		}
		if mr.OffConfirmed {
			by = append(by, mr.Method)
		}
		already = already && mr.Already
	}
	if already {
		return skipped("already off, confirmed by %s (level %d)", strings.Join(by, ", "), res.Level+1), nil
	}
	return done("powered off, confirmed by %s (level %d)", strings.Join(by, ", "), res.Level+1), nil
}

// removeFromCluster deletes the Node once it is cordoned, drained and free
// of labels (else 409 Conflict), and waits until it is gone.
func (r *run) removeFromCluster(ctx context.Context) (result, error) {
	c, n, res, err := r.readNode(ctx, "Node %s already removed")
	if n == nil {
		return res, err
	}
	node := r.p.Node
	pods, err := c.Pods(ctx, node)
	if err != nil && !gone(err) {
		return result{}, fmt.Errorf("list the pods: %w", err)
	}
	var problems []string
	if !n.Unschedulable {
		problems = append(problems, "not cordoned")
	}
	if left := podsLeft(pods); len(left) > 0 {
		problems = append(problems, fmt.Sprintf("not drained: %s on it: %s", plural(len(left), "pod"), podNames(left)))
	}
	if labels := LeftoverLabels(n.Labels, r.p.Request.Labels); len(labels) > 0 {
		problems = append(problems, "labels left: "+strings.Join(labels, ", "))
	}
	if len(problems) > 0 {
		return result{}, &Error{Node: node, Step: StepRemoveFromCluster, Reason: ReasonConflict,
			Err: fmt.Errorf("%w: %s", ErrNotReady, strings.Join(problems, "; "))}
	}
	err = c.DeleteNode(ctx, node)
	if gone(err) {
		return skipped("Node %s already removed", node), nil
	}
	if err != nil {
		return result{}, fmt.Errorf("delete the Node: %w", err)
	}
	err = r.wait(ctx, r.x.poll(), func(ctx context.Context) (bool, error) {
		_, err := c.Node(ctx, node)
		if gone(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read the node: %w", err)
		}
		return false, errors.New("the Node is still there (a finalizer?)")
	})
	if err != nil {
		return result{}, fmt.Errorf("Node deleted but not gone: %w", err)
	}
	return done("Node %s deleted", node), nil
}
