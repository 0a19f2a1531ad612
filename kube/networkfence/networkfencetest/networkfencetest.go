// Package networkfencetest plays CSI-Addons' controller for tests of
// programs that fence through NetworkFence objects (driver networkfence):
// where no CSI-Addons controller or CSI driver runs, StandIn answers each
// NetworkFence as the controller would, and keeps which CIDRs it fenced.
package networkfencetest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/internal/kubeobj"
	"github.com/fencekit/fencekit/kube/networkfence"
)

// FailCIDR is a CIDR the stand-in refuses to fence: a NetworkFence that
// names it is answered Failed, "rpc error: the storage refused".
const FailCIDR = "10.66.0.1/32"

// StandIn answers each NetworkFence whose status is empty, after a short
// delay, Succeeded for the fence state it asks (Failed for CIDRs that
// include FailCIDR), and keeps, as the truth, which CIDRs it fenced. A
// deleted NetworkFence is unfenced, as its finalizer's work would do.
type StandIn struct {
	mu     sync.Mutex
	fenced map[string]bool // sorted CIDRs joined by ","
}

// Start runs a stand-in on c (a client with watches of NetworkFences, such
// as client.NewWithWatch's) until the test ends.
func Start(t testing.TB, c client.WithWatch) *StandIn {
	t.Helper()
	s := &StandIn{fenced: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	list := kubeobj.List(networkfence.Resource.GroupVersion().WithKind(networkfence.Kind))
	w, err := c.Watch(ctx, list)
	if err != nil {
		cancel()
		t.Fatalf("networkfencetest: watching NetworkFences: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if u, isU := ev.Object.(*unstructured.Unstructured); isU {
					s.answer(ctx, c, ev.Type, u)
				}
			}
		}
	}()
	return s
}

func (s *StandIn) answer(ctx context.Context, c client.Client, ev watch.EventType, u *unstructured.Unstructured) {
	cidrs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "cidrs")
	slices.Sort(cidrs)
	key := strings.Join(cidrs, ",")
	if ev == watch.Deleted {
		s.set(key, false)
		return
	}
	if r, _, _ := unstructured.NestedString(u.Object, "status", "result"); r != "" {
		return
	}
	state, _, _ := unstructured.NestedString(u.Object, "spec", "fenceState")
	time.Sleep(50 * time.Millisecond)
	result, msg, failed := networkfence.ResultSucceeded, "fence operation successful", slices.Contains(cidrs, FailCIDR)
	if failed {
		result, msg = networkfence.ResultFailed, "rpc error: the storage refused"
	}
	u.Object["status"] = map[string]any{"result": result, "message": msg}
	// The truth changes only with an answer the server took; a refused
	// update (the object changed or went) is answered at the next event.
	if c.Status().Update(ctx, u) == nil && !failed {
		s.set(key, state == networkfence.StateFenced)
	}
}

func (s *StandIn) set(key string, fenced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fenced[key] = fenced
}

// Fenced reports whether the stand-in fenced exactly cidrs (in any order)
// with one NetworkFence, and has not unfenced them since.
func (s *StandIn) Fenced(cidrs ...string) bool {
	c := slices.Clone(cidrs)
	slices.Sort(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fenced[strings.Join(c, ",")]
}
