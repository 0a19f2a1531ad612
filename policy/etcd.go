package policy

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// GateEtcdQuorum names the refusals of EtcdQuorum.
const GateEtcdQuorum = "etcd-quorum"

// EtcdMember is one member of the cluster's etcd as EtcdQuorum sees it,
// at the time of the question.
type EtcdMember struct {
	// Name names the member (its name, or its ID when it has none).
	Name string
	// Learner is true for a learner: it does not vote, and counts for no
	// quorum.
	Learner bool
	// OnNode is true when the member runs on the candidate node.
	OnNode bool
	// Healthy is true when the member answered as healthy (a
	// linearizable read, no alarm); Problem says why not.
	Healthy bool
	Problem string
}

// EtcdMembers returns the members of the cluster's etcd, each marked as
// running on node or not and as healthy or not; an error when they cannot
// be read (teardown.EtcdMembersOf reads them from a teardown.Etcd).
type EtcdMembers func(ctx context.Context, node string) ([]EtcdMember, error)

// EtcdQuorum refuses to fence a control-plane node whose etcd member is
// healthy when taking that member down would leave fewer healthy voting
// members than a quorum of all the voting members: fencing it would take
// the API away. A node whose members are already unhealthy (or learners,
// or none) is admitted at once: fencing it costs etcd nothing. The
// arithmetic, for V voting members of which H are healthy and not on the
// node, is H >= V/2+1; so with two voting members neither may be fenced
// while both are healthy, and with three, one may be while the two others
// are. Members that cannot be read refuse: the quorum is unknown. Nodes
// that are not control-plane nodes are admitted without a look.
//
// Its reasons read
//
//	fencing node cp-1 would take its healthy etcd member cp-1 down and leave 1 of 3 voting members healthy, under the quorum of 2 (cp-3: unhealthy: context deadline exceeded); fencing waits until another member is healthy again
func EtcdQuorum(members EtcdMembers) Gate {
	return GateFunc(func(ctx context.Context, c Candidate, cl Cluster) Decision {
		if !c.Node.ControlPlane && !c.node(cl).ControlPlane {
			return Admitted()
		}
		ms, err := members(ctx, c.Node.Name)
		if err != nil {
			return Refuse(GateEtcdQuorum, "the etcd members cannot be read, so fencing control-plane node %s could break etcd's quorum: %v", c.Node.Name, err)
		}
		voters, healthy := 0, 0
		var mine []string
		var down []string
		for _, m := range ms {
			if m.Learner {
				continue
			}
			voters++
			switch {
			case m.OnNode && m.Healthy:
				mine = append(mine, m.Name)
			case m.OnNode:
			case m.Healthy:
				healthy++
			default:
				why := m.Problem
				if why == "" {
					why = "unhealthy"
				}
				down = append(down, m.Name+": "+why)
			}
		}
		if len(mine) == 0 {
			return Admitted()
		}
		quorum := voters/2 + 1
		if healthy >= quorum {
			return Admitted()
		}
		reason := fmt.Sprintf("fencing node %s would take its healthy etcd member %s down and leave %d of %d voting members healthy, under the quorum of %d",
			c.Node.Name, strings.Join(mine, ", "), healthy, voters, quorum)
		if len(down) > 0 {
			reason += " (" + strings.Join(down, "; ") + ")"
		}
		d := Refuse(GateEtcdQuorum, "%s; fencing waits until another member is healthy again", reason)
		d.RetryAfter = 10 * time.Second
		return d
	})
}
