package teardown_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/teardown"
)

func TestPlanSteps(t *testing.T) {
	s := newSite(t)
	p := s.plan(t, teardown.Request{Addresses: []string{"node-3.example.com", "10.0.0.3"}})
	var names []string
	for _, st := range p.Steps {
		names = append(names, st.Name())
		assert.Equal(t, st.Kind != teardown.StepShutdownKubelet, st.StopsPlan, st.Name())
		assert.Positive(t, st.Timeout)
		assert.NotEmpty(t, st.Detail)
	}
	assert.Equal(t, []string{"drain", "clear-labels", "remove-etcd", "etcd-ready", "shutdown-kubelet",
		"destroy-node", "power-off", "release-node", "remove-from-cluster"}, names)
	assert.Equal(t, []string{"10.0.0.3", "node-3.example.com"}, p.Addresses, "the Node's, then the request's, once each")
	assert.Equal(t, teardown.DefaultTimeouts(), p.Request.Timeouts)
	assert.Empty(t, s.cluster.Calls()[1:], "planning reads the node once and changes nothing")
	assert.Contains(t, p.String(), "  9. remove-from-cluster [timeout 2m0s, stops the plan on failure]")
}

func TestPlanRefusals(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(s *site)
		req    teardown.Request
		code   int
		reason teardown.Reason
		field  string
		is     error
	}{
		{"bad request", nil, teardown.Request{Node: "node-3", Timeouts: teardown.Timeouts{Drain: 60e9, DrainGracePeriod: 120e9}},
			400, teardown.ReasonBadRequest, "drain-node-grace-period", nil},
		{"no such node", nil, teardown.Request{Node: "node-9"}, 404, teardown.ReasonNotFound, "node", teardown.ErrNodeNotFound},
		{"no such revision", nil, teardown.Request{Node: "node-3", Revision: 9}, 412, teardown.ReasonPreconditionFailed, "target-revision", teardown.ErrRevisionNotFound},
		{"uncommitted revision", func(s *site) { s.revs.Add(teardown.Revision{ID: 9}) }, teardown.Request{Node: "node-3", Revision: 9},
			412, teardown.ReasonPreconditionFailed, "target-revision", teardown.ErrRevisionNotFound},
		{"intermediate commits", func(s *site) { s.revs.Add(teardown.Revision{Committed: true}) },
			teardown.Request{Node: "node-3", Target: teardown.TargetCommitted},
			412, teardown.ReasonPreconditionFailed, "allow-intermediate-commits", teardown.ErrIntermediateCommits},
		{"no successful site action", func(s *site) {
			s.revs = teardown.NewMemoryRevisions(teardown.Revision{ID: 1, Committed: true})
			s.x.Revisions = s.revs
		},
			teardown.Request{Node: "node-3"}, 412, teardown.ReasonPreconditionFailed, "target-revision", teardown.ErrRevisionNotFound},
		{"cluster down", func(s *site) { s.cluster.Hook = func(string, string) error { return errors.New("connection refused") } },
			teardown.Request{Node: "node-3"}, 500, teardown.ReasonInternalError, "", nil},
		{"revisions down", func(s *site) { s.x.Revisions = failingRevisions{} },
			teardown.Request{Node: "node-3"}, 500, teardown.ReasonInternalError, "", nil},
		{"no cluster", func(s *site) { s.x.Cluster = nil }, teardown.Request{Node: "node-3"}, 500, teardown.ReasonInternalError, "", teardown.ErrNotConfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSite(t)
			if tt.setup != nil {
				tt.setup(s)
			}
			p, err := s.x.Plan(t.Context(), tt.req)
			require.Error(t, err)
			assert.Nil(t, p)
			st := teardown.StatusOf(err)
			assert.Equal(t, tt.code, st.Code)
			assert.Equal(t, tt.reason, st.Reason)
			assert.Equal(t, "Failure", st.Status)
			var te *teardown.Error
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tt.field, te.Field)
			assert.Equal(t, tt.req.Node, te.Node)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

type failingRevisions struct{}

func (failingRevisions) Revisions(context.Context) ([]teardown.Revision, error) {
	return nil, errors.New("deckhand: 503")
}
func (failingRevisions) AddTag(context.Context, int, teardown.Tag) error {
	return errors.New("deckhand: 503")
}

func TestPlanAllowIntermediateCommits(t *testing.T) {
	s := newSite(t)
	s.revs.Add(teardown.Revision{Committed: true}) // 4; 3 is an intermediate commit
	p := s.plan(t, teardown.Request{Target: teardown.TargetCommitted, AllowIntermediateCommits: true})
	assert.Equal(t, 4, p.Revision)
	require.Len(t, p.Notes, 1)
	assert.Contains(t, p.Notes[0], "revisions 3 lie between the last site action and revision 4")
	assert.Contains(t, s.logs.String(), `level=WARN msg="teardown: intermediate committed revisions check skipped (allow-intermediate-commits)" node=node-3 revision=4 intermediate=3`)
	assert.Contains(t, p.String(), "note: intermediate committed revisions check skipped")
}

func TestPlanWithoutRevisions(t *testing.T) {
	s := newSite(t)
	s.x.Revisions = nil
	p := s.plan(t, teardown.Request{Revision: 12})
	assert.Zero(t, p.Revision)
	assert.Equal(t, []string{"no revision store: the target revision is not checked"}, p.Notes)
}

func rev(id int, committed bool, tags ...string) teardown.Revision {
	r := teardown.Revision{ID: id, Committed: committed}
	for _, n := range tags {
		r.Tags = append(r.Tags, teardown.Tag{Name: n, Body: fmt.Sprintf("dag_id:d%d", id)})
	}
	return r
}

const (
	ok   = teardown.TagSiteActionSuccess
	fail = teardown.TagSiteActionFailure
)

func TestSelectRevision(t *testing.T) {
	revs := []teardown.Revision{rev(5, true), rev(1, true, ok), rev(2, true, fail), rev(3, true, ok, fail), rev(4, true), rev(6, false)}
	tests := []struct {
		target teardown.Target
		id     int
		want   int // 0: not found
	}{
		{teardown.TargetSuccessfulSiteAction, 0, 3},
		{teardown.TargetLastSiteAction, 0, 3},
		{teardown.TargetCommitted, 0, 5},
		{teardown.TargetCommitted, 4, 4},
		{teardown.TargetCommitted, 6, 0}, // not committed
		{teardown.TargetCommitted, 7, 0},
		{teardown.Target(9), 0, 0},
	}
	for _, tt := range tests {
		got, err := teardown.SelectRevision(revs, tt.target, tt.id)
		if tt.want == 0 {
			assert.ErrorIs(t, err, teardown.ErrRevisionNotFound, "%v %d", tt.target, tt.id)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got.ID, "%v %d", tt.target, tt.id)
	}

	revs = []teardown.Revision{rev(1, true, ok), rev(2, true, fail)}
	got, err := teardown.SelectRevision(revs, teardown.TargetLastSiteAction, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, got.ID)
	got, err = teardown.SelectRevision(revs, teardown.TargetSuccessfulSiteAction, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, got.ID)
	_, err = teardown.SelectRevision(nil, teardown.TargetCommitted, 0)
	assert.ErrorIs(t, err, teardown.ErrRevisionNotFound)
}

func TestIntermediateCommits(t *testing.T) {
	tests := []struct {
		name    string
		revs    []teardown.Revision
		current int
		want    []int
	}{
		{"one commit since the last action", []teardown.Revision{rev(1, true, ok), rev(2, true)}, 2, nil},
		{"two commits", []teardown.Revision{rev(1, true, ok), rev(2, true), rev(3, true)}, 3, []int{2}},
		{"uncommitted revisions do not count", []teardown.Revision{rev(1, true, ok), rev(2, false), rev(3, true)}, 3, nil},
		{"a failed action counts as an action", []teardown.Revision{rev(1, true, ok), rev(2, true), rev(3, true, fail), rev(4, true)}, 4, nil},
		{"null case: revision 0", []teardown.Revision{rev(1, true), rev(2, true), rev(3, true)}, 3, []int{1, 2}},
		{"target before the last action", []teardown.Revision{rev(1, true, ok), rev(2, true), rev(3, true, fail)}, 1, nil},
		{"later commits do not count", []teardown.Revision{rev(1, true, ok), rev(2, true), rev(3, true)}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, teardown.IntermediateCommits(tt.revs, tt.current))
		})
	}
}

func TestMemoryRevisions(t *testing.T) {
	ctx := t.Context()
	m := teardown.NewMemoryRevisions(teardown.Revision{Committed: true}, teardown.Revision{ID: 5})
	assert.Equal(t, 6, m.Add(teardown.Revision{Committed: true}))
	require.NoError(t, teardown.TagSiteAction(ctx, m, 6, true, "redeploy_server-42"))
	require.NoError(t, teardown.TagSiteAction(ctx, m, 6, true, "redeploy_server-42"), "idempotent")
	require.NoError(t, teardown.TagSiteAction(ctx, m, 6, false, "redeploy_server-41"))
	assert.ErrorIs(t, teardown.TagSiteAction(ctx, m, 7, true, "x"), teardown.ErrRevisionNotFound)
	assert.Error(t, teardown.TagSiteAction(ctx, m, 6, true, ""))
	assert.Error(t, teardown.TagSiteAction(ctx, m, 6, true, "a b"))
	assert.ErrorIs(t, teardown.TagSiteAction(ctx, nil, 6, true, "x"), teardown.ErrNotConfigured)

	revs, err := m.Revisions(ctx)
	require.NoError(t, err)
	var ids []int
	for _, r := range revs {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []int{1, 5, 6}, ids)
	assert.Equal(t, []teardown.Tag{
		{Name: "site-action-success", Body: "dag_id:redeploy_server-42"},
		{Name: "site-action-failure", Body: "dag_id:redeploy_server-41"},
	}, revs[2].Tags)
	revs[2].Tags[0].Name = "changed"
	again, _ := m.Revisions(ctx)
	assert.Equal(t, "site-action-success", again[2].Tags[0].Name, "a copy")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.Revisions(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestStepKind(t *testing.T) {
	for k := teardown.StepDrain; k <= teardown.StepRemoveFromCluster; k++ {
		assert.NotContains(t, k.String(), "step(", k)
		assert.Equal(t, 500, k.Reason().Code())
	}
	assert.Equal(t, "step(0)", teardown.StepKind(0).String())
	assert.Equal(t, teardown.ReasonInternalError, teardown.StepKind(99).Reason())
	assert.Equal(t, "all disks", teardown.WipeAll.String())
	assert.Equal(t, "OS disk", teardown.WipeOSDisk.String())
	assert.True(t, strings.HasPrefix(teardown.Outcome(9).String(), "outcome("))
}
