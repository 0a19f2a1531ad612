package fencekube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func lease(name string, renew time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: NodeLeaseNamespace}}
	if !renew.IsZero() {
		l.Spec.RenewTime = &metav1.MicroTime{Time: renew}
	}
	return l
}

// A lease counts as renewed when this process sees its renewTime change,
// on its own clock: a node whose clock is an hour behind is not stale, one
// whose clock is an hour ahead is stale once the grace has run out since
// its last renewal was seen. A relist keeps the time a renewal was seen
// when the renewTime did not change.
func TestLeasesJudgedOnTheControllersClock(t *testing.T) {
	l := NewLeases(nil)
	s := leaseStore{l}
	assert.True(t, l.Renewed("behind").IsZero(), "before the list")
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	before := time.Now()
	require.NoError(t, s.Replace([]any{lease("behind", past), lease("ahead", future), lease("none", time.Time{})}, "1"))
	after := time.Now()
	for _, n := range []string{"behind", "ahead"} {
		r := l.Renewed(n)
		assert.False(t, r.Before(before) || r.After(after), "%s: seen at the list, not at its renewTime: %v", n, r)
	}
	assert.True(t, l.Renewed("none").IsZero())
	assert.True(t, l.Renewed("unknown").IsZero())

	seen := l.Renewed("behind")
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, s.Update(lease("behind", past))) // same renewTime: not a renewal
	assert.Equal(t, seen, l.Renewed("behind"))
	require.NoError(t, s.Update(lease("behind", past.Add(10*time.Second))))
	assert.True(t, l.Renewed("behind").After(seen), "a new renewTime is a renewal")

	seenAhead := l.Renewed("ahead")
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, s.Replace([]any{lease("behind", past.Add(10*time.Second)), lease("ahead", future)}, "2"))
	assert.Equal(t, seenAhead, l.Renewed("ahead"), "a relist is not a renewal")
	require.NoError(t, s.Delete(lease("ahead", future)))
	assert.True(t, l.Renewed("ahead").IsZero())
}
