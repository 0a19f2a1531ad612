package fencegroup_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencekit/fencekit/fencegroup"
	"github.com/fencekit/fencekit/policy"
)

func BenchmarkParseStatus(b *testing.B) {
	data := fixture(b, "status-squid-degraded.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := fencegroup.ParseStatus(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParsePGStat(b *testing.B) {
	data := fixture(b, "pgstat-reef-degraded.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := fencegroup.ParsePGStat(data); err != nil {
			b.Fatal(err)
		}
	}
}

// bigTree is ceph osd tree of a cluster of hosts × 12 OSDs.
func bigTree(hosts int) []byte {
	var nodes, root []byte
	for h := range hosts {
		id := -2 - h
		root = fmt.Appendf(root, "%s%d", sep(h), id)
		var children []byte
		for o := range 12 {
			children = fmt.Appendf(children, "%s%d", sep(o), h*12+o)
		}
		nodes = fmt.Appendf(nodes, `,{"id":%d,"name":"stor-%03d","type":"host","type_id":1,"pool_weights":{},"children":[%s]}`, id, h, children)
		for o := range 12 {
			nodes = fmt.Appendf(nodes, `,{"id":%d,"device_class":"hdd","name":"osd.%d","type":"osd","type_id":0,"crush_weight":16.37,"depth":2,"pool_weights":{},"exists":1,"status":"up","reweight":1,"primary_affinity":1}`, h*12+o, h*12+o)
		}
	}
	return fmt.Appendf(nil, `{"nodes":[{"id":-1,"name":"default","type":"root","type_id":11,"children":[%s]}%s],"stray":[]}`, root, nodes)
}

func sep(i int) string {
	if i == 0 {
		return ""
	}
	return ","
}

func BenchmarkParseOSDTree(b *testing.B) {
	for _, hosts := range []int{3, 100} {
		data := bigTree(hosts)
		b.Run(fmt.Sprintf("osds=%d", hosts*12), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := fencegroup.ParseOSDTree(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseOSDMetadata(b *testing.B) {
	data := fixture(b, "osdmetadata-reef.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := fencegroup.ParseOSDMetadata(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBudget(b *testing.B) {
	st, err := fencegroup.ParseStatus(fixture(b, "status-reef-clean.json"))
	if err != nil {
		b.Fatal(err)
	}
	var r fencegroup.Rules
	b.ReportAllocs()
	for b.Loop() {
		if !r.Budget(st).Clean {
			b.Fatal("not clean")
		}
	}
}

func BenchmarkLabels(b *testing.B) {
	osds, err := fencegroup.ParseOSDTree(bigTree(100))
	if err != nil {
		b.Fatal(err)
	}
	machines := make([]fencegroup.Machine, 1000)
	for i := range machines {
		machines[i] = fencegroup.Machine{Name: fmt.Sprintf("stor-%03d", i), Labels: map[string]string{}}
		if i < 100 {
			machines[i].Labels[fencegroup.Label("rook-ceph")] = ""
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (fencegroup.Rules{}).Labels("rook-ceph", osds, machines); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGateAdmit asks the gate for one node of a 10,000-node cluster
// whose fence group has 100 machines.
func BenchmarkGateAdmit(b *testing.B) {
	osds, err := fencegroup.ParseOSDTree(bigTree(100))
	if err != nil {
		b.Fatal(err)
	}
	st := &fencegroup.Status{NumPGs: 4096, NumPools: 3, PGs: []fencegroup.PGCount{{State: "active+clean", Count: 4096}}, Placement: osds}
	h, err := fencegroup.NewHealth("rook-ceph", fencegroup.SourceFunc(func(context.Context) (*fencegroup.Status, error) { return st, nil }), fencegroup.HealthOptions{})
	if err != nil {
		b.Fatal(err)
	}
	h.Set(st)
	g, err := fencegroup.NewGate("rook-ceph", h, fencegroup.GateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cl := policy.Cluster{Now: h.Snapshot().ReadAt}
	for i := range 10000 {
		n := policy.Node{Name: fmt.Sprintf("stor-%03d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("stor-%03d", i)}}
		if i < 100 {
			n.Labels[fencegroup.Label("rook-ceph")] = ""
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	cl.Nodes[7].Unresponsive = true
	c := policy.Candidate{Node: cl.Nodes[7], Step: "power-management"}
	b.ReportAllocs()
	for b.Loop() {
		if d := g.Admit(context.Background(), c, cl); !d.Admit {
			b.Fatal(d)
		}
	}
}
