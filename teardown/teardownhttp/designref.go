package teardownhttp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// DesignRef is the design reference a decommission, a remove-etcd and a
// destroy take as their body, and the etcd health query as its design_ref
// parameter (its Href alone), as Airship's node teardown design shows it:
//
//	{"rel": "design",
//	 "href": "deckhand+https://deckhand.example/api/v1.0/revisions/7/rendered-documents",
//	 "type": "application/x-yaml"}
//
// The revision is the number after "/revisions/" in Href's path.
type DesignRef struct {
	// Rel must be "design".
	Rel string `json:"rel"`
	// Href is the URL of the revision's rendered documents.
	Href string `json:"href"`
	// Type is the documents' media type, application/x-yaml; optional.
	Type string `json:"type,omitempty"`
}

// RelDesign is the only Rel a design reference may have.
const RelDesign = "design"

// NewDesignRef returns the reference of revision id of the design store at
// base (such as "deckhand+https://deckhand.example/api/v1.0"):
// base/revisions/<id>/rendered-documents, rel design, type
// application/x-yaml.
func NewDesignRef(base string, id int) DesignRef {
	return DesignRef{Rel: RelDesign, Href: fmt.Sprintf("%s/revisions/%d/rendered-documents", strings.TrimSuffix(base, "/"), id),
		Type: "application/x-yaml"}
}

// errNoRevision says a reference names no revision.
var errNoRevision = errors.New(`names no revision (want a URL whose path holds "/revisions/<number>/")`)

// Revision returns the revision the reference names, checking Rel too.
func (d DesignRef) Revision() (int, error) {
	if d.Rel != RelDesign {
		return 0, fmt.Errorf("rel %q is not %q", clip(d.Rel), RelDesign)
	}
	return ParseDesignRef(d.Href)
}

// ParseDesignRef returns the revision a design reference's URL names: the
// whole number (from 1) that follows a "revisions" segment of its path.
func ParseDesignRef(href string) (int, error) {
	if href == "" {
		return 0, errors.New("empty design reference")
	}
	u, err := url.Parse(href)
	if err != nil || u.Host == "" {
		return 0, fmt.Errorf("%q is not a URL with a host", clip(href))
	}
	segs := strings.Split(u.Path, "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] != "revisions" {
			continue
		}
		v := segs[i+1]
		if v == "" || strings.TrimLeft(v, "0123456789") != "" || len(v) > 10 {
			break
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1<<31-1 {
			break
		}
		return n, nil
	}
	return 0, fmt.Errorf("%q %w", clip(href), errNoRevision)
}

// clip shortens outside input quoted in an error.
func clip(s string) string {
	const max = 96
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
