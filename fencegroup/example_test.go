package fencegroup_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/policy"
)

// The budget and the labels from ceph status and ceph osd tree output.
func Example() {
	statusJSON, _ := os.ReadFile("testdata/status-squid-degraded.json")
	treeJSON, _ := os.ReadFile("testdata/osdtree-reef.json")

	st, err := fencegroup.ParseStatus(statusJSON)
	if err != nil {
		fmt.Println(err)
		return
	}
	if st.Placement, err = fencegroup.ParseOSDTree(treeJSON); err != nil {
		fmt.Println(err)
		return
	}
	var rules fencegroup.Rules
	b := rules.Budget(st)
	fmt.Printf("maxUnavailable %d: %s\n", b.MaxUnavailable, b.Reason)

	plan, err := rules.Labels("rook-ceph", st.Placement, []fencegroup.Machine{
		{Name: "worker-0"}, {Name: "worker-1", Labels: map[string]string{"fencegroup.rook.io/rook-ceph": ""}},
		{Name: "worker-2"}, {Name: "gpu-0", Labels: map[string]string{"fencegroup.rook.io/rook-ceph": ""}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range plan.Changes {
		fmt.Println(c)
	}
	// Output:
	// maxUnavailable 0: 86 of 129 PGs not active+clean (80 active+undersized+degraded, 6 active+undersized)
	// add fencegroup.rook.io/rook-ceph to worker-0 (runs osd.0, osd.3 of Ceph cluster rook-ceph)
	// add fencegroup.rook.io/rook-ceph to worker-2 (runs osd.2, osd.5 of Ceph cluster rook-ceph)
	// remove fencegroup.rook.io/rook-ceph from gpu-0 (runs no OSD of Ceph cluster rook-ceph)
}

// The gate in front of the fence controller: a health cache read by the
// ceph command (here a stand-in source), refreshed every minute by Run.
func ExampleGate() {
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	clean := true
	src := fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) {
		st := &fencegroup.Status{NumPGs: 256, NumPools: 3, PGs: []fencegroup.PGCount{{State: "active+clean", Count: 256}}}
		if !clean {
			st.PGs = []fencegroup.PGCount{{State: "active+clean", Count: 244}, {State: "active+undersized+degraded", Count: 12}}
		}
		return st, nil
	})
	// In a controller: src = &fencegroup.CLI{ID: "fencer"}, and go health.Run(ctx).
	health, _ := fencegroup.NewHealth("rook-ceph", src, fencegroup.HealthOptions{Now: func() time.Time { return now }})
	gate, _ := fencegroup.NewGate("rook-ceph", health, fencegroup.GateOptions{})
	_, _ = health.Refresh(context.Background())

	inGroup := map[string]string{fencegroup.Label("rook-ceph"): ""}
	a := policy.Node{Name: "worker-0", Labels: inGroup, Unresponsive: true}
	b := policy.Node{Name: "worker-1", Labels: inGroup, Unresponsive: true}
	gpu := policy.Node{Name: "gpu-0", Unresponsive: true}
	cl := policy.Cluster{Now: now, Nodes: []policy.Node{a, b, gpu}}

	fmt.Println(gate.Admit(context.Background(), policy.Candidate{Node: a}, cl))
	a.Fencing, cl.Nodes[0].Fencing = true, true
	fmt.Println(gate.Admit(context.Background(), policy.Candidate{Node: b}, cl))

	// worker-0 is back; its OSDs recover.
	a.Fencing, a.Unresponsive = false, false
	cl.Nodes[0] = a
	clean = false
	_, _ = health.Refresh(context.Background())
	fmt.Println(gate.Admit(context.Background(), policy.Candidate{Node: b}, cl))
	fmt.Println(gate.Admit(context.Background(), policy.Candidate{Node: gpu}, cl))
	// Output:
	// admitted
	// refused by ceph-fence-group/rook-ceph: Ceph cluster rook-ceph allows 1 unavailable machine in its fence group and worker-0 (being fenced) is already unavailable
	// refused by ceph-fence-group/rook-ceph: 12 of 256 PGs not active+clean (12 active+undersized+degraded) in Ceph cluster rook-ceph; worker-1 is in its fence group
	// admitted
}
