package fencekube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fencekit/fencekit/kube/fencekube"
)

// clusterSize is the size of the cluster of the pass benchmarks.
const clusterSize = 10000

// BenchmarkStoreList is the Store's part of a controller pass over a large
// cluster: a List from the synced informer, every object converted once
// before the timer starts.
func BenchmarkStoreList(b *testing.B) {
	var objs []runtime.Object
	for i := range clusterSize {
		u := object(b, sample(fmt.Sprintf("worker-%05d", i)))
		u.SetResourceVersion(fmt.Sprint(i + 1))
		objs = append(objs, u)
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "NodeFenceList"}, objs...)
	s := fencekube.NewStore(client, fencekube.StoreOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)
	defer s.Stop()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := s.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	if recs, err := s.List(ctx); err != nil || len(recs) != clusterSize {
		b.Fatalf("%d records, %v", len(recs), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.List(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHealthNodes is the Health's part of a controller pass over a
// large cluster.
func BenchmarkHealthNodes(b *testing.B) {
	var objs []runtime.Object
	for i := range clusterSize {
		objs = append(objs, node(fmt.Sprintf("worker-%05d", i), corev1.ConditionTrue, t0, map[string]string{"zone": "a"}))
	}
	h := fencekube.NewHealth(fake.NewClientset(objs...))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.Start(ctx)
	defer h.Stop()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := h.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := h.Nodes(); len(n) != clusterSize {
			b.Fatalf("%d nodes", len(n))
		}
	}
}

// BenchmarkDecode converts one object with three jobs and two transitions
// to a record.
func BenchmarkDecode(b *testing.B) {
	u := object(b, sample("worker-1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode converts one record to an object.
func BenchmarkEncode(b *testing.B) {
	nf := sample("worker-1")
	b.ReportAllocs()
	for b.Loop() {
		var u *unstructured.Unstructured
		u, err := fencekube.FromRecord(nf).ToUnstructured()
		if err != nil || u == nil {
			b.Fatal(err)
		}
	}
}
