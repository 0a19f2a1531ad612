package teardown

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/policy"
)

// MemberOnNode reports whether etcd member m runs on the node: its Name is
// the node's name, or the host of one of its peer or client URLs is the
// node's name or one of addrs (names compared without regard to case or a
// trailing dot, IP addresses by value, so "::ffff:10.0.0.3" is 10.0.0.3).
// A member that has not started yet has no name, so its peer URLs decide.
// A URL that does not parse matches nothing.
func MemberOnNode(m Member, node string, addrs []string) bool {
	if m.Name != "" && m.Name == node {
		return true
	}
	names := append([]string{node}, addrs...)
	for _, raw := range slices.Concat(m.PeerURLs, m.ClientURLs) {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		h := u.Hostname()
		if h == "" {
			continue
		}
		for _, n := range names {
			if sameHost(h, n) {
				return true
			}
		}
	}
	return false
}

// sameHost compares two hosts: IP addresses by value, names without regard
// to case or a trailing dot.
func sameHost(a, b string) bool {
	ia, errA := netip.ParseAddr(a)
	ib, errB := netip.ParseAddr(b)
	if errA == nil || errB == nil {
		return errA == nil && errB == nil && ia.Unmap() == ib.Unmap()
	}
	return a != "" && strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}

// Quorum is the arithmetic of the rule remove-etcd applies before removing
// a voting member: the healthy voting members that remain, not counting any
// on the node being torn down, must be a majority of the voting members
// that remain.
type Quorum struct {
	// Voters counts the voting members before the removal.
	Voters int
	// Remaining counts the voting members after it.
	Remaining int
	// Healthy counts the healthy voting members among Remaining, leaving
	// out those on the node.
	Healthy int
}

// OK reports whether the removal keeps a healthy majority: 2*Healthy >
// Remaining. Removing the last member is never OK.
func (q Quorum) OK() bool { return 2*q.Healthy > q.Remaining }

// Need returns how many healthy members the remaining ones need.
func (q Quorum) Need() int { return q.Remaining/2 + 1 }

// String says the counts: "3 voting members, 2 after the removal, 1 of them
// healthy (2 needed)".
func (q Quorum) String() string {
	return fmt.Sprintf("%d voting members, %d after the removal, %d of them healthy (%d needed)", q.Voters, q.Remaining, q.Healthy, q.Need())
}

// CheckQuorum counts what Quorum.OK decides for removing member id from
// members: onNode marks the members on the node being torn down (never
// counted healthy), healthy the members that answered as healthy.
func CheckQuorum(members []Member, id uint64, onNode, healthy func(Member) bool) Quorum {
	var q Quorum
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		q.Voters++
		if m.ID == id {
			continue
		}
		q.Remaining++
		if !onNode(m) && healthy(m) {
			q.Healthy++
		}
	}
	return q
}

// EtcdHealth reads the health of every member of the clusters, the teardown
// design's "check etcd" response: 200 Success with one HealthMessage per
// member (message Healthy, or Unhealthy with the reason, name
// "cluster/member"), or 500 EtcdNotAccessible when a cluster could not be
// read at all (its message "Unable to access Etcd" is an error). Unhealthy
// members are not an error: that is still a 200, as in the design.
func (x *Executor) EtcdHealth(ctx context.Context) *Status {
	var msgs []Message
	reason := ReasonSuccess
	for _, name := range x.etcdNames() {
		members, err := x.etcdMembers(ctx, x.Etcd[name])
		if err != nil {
			reason = ReasonEtcdNotAccessible
			msgs = append(msgs, Message{Message: "Unable to access Etcd: " + err.Error(), Error: true, Kind: KindHealth, Name: name})
			continue
		}
		health := x.healthOf(ctx, x.Etcd[name], members)
		for _, m := range members {
			msgs = append(msgs, healthMessage(name, m, health[m.ID]))
		}
	}
	msg := "etcd health of " + plural(len(x.Etcd), "cluster")
	if reason != ReasonSuccess {
		msg = "some etcd cluster could not be read"
	}
	return NewStatus(reason, msg, msgs)
}

// healthMessage is one member's HealthMessage.
func healthMessage(cluster string, m Member, err error) Message {
	msg := Message{Message: "Healthy", Kind: KindHealth, Name: cluster + "/" + memberName(m)}
	if err != nil {
		msg.Message = "Unhealthy: " + err.Error()
	}
	return msg
}

// memberName names a member for messages: its name, or its ID in hex
// when it has none (not started).
func memberName(m Member) string {
	if m.Name != "" {
		return m.Name
	}
	return fmt.Sprintf("%x", m.ID)
}

// etcdNames returns the names of the executor's etcd clusters, sorted.
func (x *Executor) etcdNames() []string {
	names := make([]string, 0, len(x.Etcd))
	for n := range x.Etcd {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// etcdMembers lists a cluster's members within the per-call timeout.
func (x *Executor) etcdMembers(ctx context.Context, e Etcd) ([]Member, error) {
	cctx, cancel := context.WithTimeout(ctx, x.etcdCallTimeout())
	defer cancel()
	return e.Members(cctx)
}

// healthOf reads the health of the members concurrently, each within the
// per-call timeout, so that dead members cost one timeout, not one each.
func (x *Executor) healthOf(ctx context.Context, e Etcd, members []Member) map[uint64]error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = x.memberHealth(ctx, e, m) })
	}
	wg.Wait()
	out := make(map[uint64]error, len(members))
	for i, m := range members {
		out[m.ID] = errs[i]
	}
	return out
}

// memberHealth reads one member's health within the per-call timeout.
func (x *Executor) memberHealth(ctx context.Context, e Etcd, m Member) error {
	cctx, cancel := context.WithTimeout(ctx, x.etcdCallTimeout())
	defer cancel()
	return e.MemberHealth(cctx, m)
}

// EtcdMembersOf returns the etcd members of e for the fencing gate
// policy.EtcdQuorum: a member runs on the node as MemberOnNode says (addrs
// gives the node's addresses; nil for none), and its health is read
// concurrently, each member within callTimeout (0 means 2 s), so that a
// dead member costs one timeout.
func EtcdMembersOf(e Etcd, addrs func(node string) []string, callTimeout time.Duration) policy.EtcdMembers {
	if callTimeout <= 0 {
		callTimeout = 2 * time.Second
	}
	return func(ctx context.Context, node string) ([]policy.EtcdMember, error) {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		members, err := e.Members(lctx)
		cancel()
		if err != nil {
			return nil, err
		}
		var a []string
		if addrs != nil {
			a = addrs(node)
		}
		out := make([]policy.EtcdMember, len(members))
		var wg sync.WaitGroup
		for i, m := range members {
			out[i] = policy.EtcdMember{Name: memberName(m), Learner: m.IsLearner, OnNode: MemberOnNode(m, node, a)}
			wg.Go(func() {
				hctx, cancel := context.WithTimeout(ctx, callTimeout)
				defer cancel()
				if err := e.MemberHealth(hctx, m); err != nil {
					out[i].Problem = err.Error()
					return
				}
				out[i].Healthy = true
			})
		}
		wg.Wait()
		return out, nil
	}
}
