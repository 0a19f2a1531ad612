package teardown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The site-action tags (the Shipyard issue 16 design, as Airship's teardown
// design gives it): a site action (deploy_site, update_site) tags the
// revision it used with one of them at its end, with the body "dag_id:<id>".
// A revision may carry both when a later run of the same revision succeeded.
const (
	TagSiteActionSuccess = "site-action-success"
	TagSiteActionFailure = "site-action-failure"
)

// SiteActionTag returns the tag a site action puts on its revision:
// site-action-success or site-action-failure, body "dag_id:<dagID>".
func SiteActionTag(success bool, dagID string) Tag {
	name := TagSiteActionFailure
	if success {
		name = TagSiteActionSuccess
	}
	return Tag{Name: name, Body: "dag_id:" + dagID}
}

// TagSiteAction tags revision id with SiteActionTag(success, dagID). The
// teardown design tags only site actions that got past document validation:
// call it after the action ran, not when it was refused. dagID must be
// non-empty and hold no white space.
func TagSiteAction(ctx context.Context, store RevisionStore, id int, success bool, dagID string) error {
	if dagID == "" || strings.ContainsFunc(dagID, func(r rune) bool { return r <= ' ' }) {
		return fmt.Errorf("teardown: tag revision %d: %q is not a dag id", id, clip(dagID))
	}
	if store == nil {
		return fmt.Errorf("teardown: tag revision %d: no revision store: %w", id, ErrNotConfigured)
	}
	return store.AddTag(ctx, id, SiteActionTag(success, dagID))
}

// hasTag reports whether r carries a tag named name.
func hasTag(r Revision, name string) bool {
	return slices.ContainsFunc(r.Tags, func(t Tag) bool { return t.Name == name })
}

// siteAction reports whether r carries a site-action tag.
func siteAction(r Revision) bool {
	return hasTag(r, TagSiteActionSuccess) || hasTag(r, TagSiteActionFailure)
}

// SelectRevision picks the design revision of a request from revs (in any
// order): revision id when id is not zero (it must exist and be committed),
// else the newest (highest ID) revision that target names. "Newest" is by
// ID because tags carry no time and revisions are numbered in order. The
// error wraps ErrRevisionNotFound.
func SelectRevision(revs []Revision, target Target, id int) (Revision, error) {
	if id != 0 {
		for _, r := range revs {
			if r.ID == id {
				if !r.Committed {
					return Revision{}, fmt.Errorf("%w: revision %d is not committed", ErrRevisionNotFound, id)
				}
				return r, nil
			}
		}
		return Revision{}, fmt.Errorf("%w: no revision %d", ErrRevisionNotFound, id)
	}
	var match func(Revision) bool
	switch target {
	case TargetCommitted:
		match = func(r Revision) bool { return r.Committed }
	case TargetSuccessfulSiteAction:
		match = func(r Revision) bool { return hasTag(r, TagSiteActionSuccess) }
	case TargetLastSiteAction:
		match = siteAction
	default:
		return Revision{}, fmt.Errorf("%w: %v is not a target", ErrRevisionNotFound, target)
	}
	best, found := Revision{}, false
	for _, r := range revs {
		if match(r) && (!found || r.ID > best.ID) {
			best, found = r, true
		}
	}
	if !found {
		return Revision{}, fmt.Errorf("%w: no revision is %v", ErrRevisionNotFound, target)
	}
	return best, nil
}

// IntermediateCommits returns, in ID order, the committed revisions without
// a site-action tag that lie strictly between the last site action (the
// highest ID with a site-action tag; 0 when there is none, the teardown
// design's null case) and revision current. A site action should not run on
// current while there are any, unless allowed (allow-intermediate-commits).
func IntermediateCommits(revs []Revision, current int) []int {
	last := 0
	for _, r := range revs {
		if siteAction(r) && r.ID > last {
			last = r.ID
		}
	}
	var out []int
	for _, r := range revs {
		if r.Committed && r.ID > last && r.ID < current && !siteAction(r) {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	return out
}

// MemoryRevisions is an in-memory RevisionStore, safe for concurrent use.
type MemoryRevisions struct {
	mu   sync.Mutex
	revs []Revision
}

// NewMemoryRevisions returns a store holding revs. A revision with ID 0
// gets the next free ID.
func NewMemoryRevisions(revs ...Revision) *MemoryRevisions {
	m := &MemoryRevisions{}
	for _, r := range revs {
		m.Add(r)
	}
	return m
}

// Add stores a copy of r and returns its ID: r.ID, or the next free one
// when r.ID is 0. A revision with an ID already stored replaces it.
func (m *MemoryRevisions) Add(r Revision) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.ID == 0 {
		r.ID = 1
		for _, x := range m.revs {
			r.ID = max(r.ID, x.ID+1)
		}
	}
	r.Tags = slices.Clone(r.Tags)
	if i := slices.IndexFunc(m.revs, func(x Revision) bool { return x.ID == r.ID }); i >= 0 {
		m.revs[i] = r
	} else {
		m.revs = append(m.revs, r)
		slices.SortFunc(m.revs, func(a, b Revision) int { return cmp.Compare(a.ID, b.ID) })
	}
	return r.ID
}

// Revisions returns a copy of every revision, oldest (lowest ID) first.
func (m *MemoryRevisions) Revisions(ctx context.Context) ([]Revision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Revision, len(m.revs))
	for i, r := range m.revs {
		r.Tags = slices.Clone(r.Tags)
		out[i] = r
	}
	return out, nil
}

// AddTag tags revision id. Adding a tag the revision already carries (same
// name and body) does nothing. An unknown ID is an error wrapping
// ErrRevisionNotFound.
func (m *MemoryRevisions) AddTag(ctx context.Context, id int, tag Tag) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if tag.Name == "" {
		return errors.New("teardown: a tag needs a name")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.revs {
		if m.revs[i].ID == id {
			if !slices.Contains(m.revs[i].Tags, tag) {
				m.revs[i].Tags = append(m.revs[i].Tags, tag)
			}
			return nil
		}
	}
	return fmt.Errorf("teardown: tag revision %d: %w", id, ErrRevisionNotFound)
}
