package teardown

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/internal/enum"
)

// Defaults of Timeouts. The first five are those of Airship's teardown
// design; the others are fencekit's, for the steps the design gives no
// timeout.
const (
	DefaultDrainTimeout             = 3600 * time.Second
	DefaultDrainGracePeriod         = 1800 * time.Second
	DefaultClearLabelsTimeout       = 1800 * time.Second
	DefaultRemoveEtcdTimeout        = 1800 * time.Second
	DefaultEtcdReadyTimeout         = 600 * time.Second
	DefaultShutdownKubeletTimeout   = 600 * time.Second
	DefaultDestroyNodeTimeout       = 3600 * time.Second
	DefaultPowerOffTimeout          = 300 * time.Second
	DefaultReleaseNodeTimeout       = 600 * time.Second
	DefaultRemoveFromClusterTimeout = 120 * time.Second
)

// MaxTimeout is the longest timeout a request may ask for (a week): longer
// ones are refused as BadRequest rather than overflow or wait forever.
const MaxTimeout = 7 * 24 * time.Hour

// Request parameter names: the teardown design's query parameters of the
// decommission API and the redeploy_server action, and fencekit's for the
// steps the design gives no timeout. Field names in errors are these.
const (
	ParamDrainTimeout             = "drain-node-timeout"
	ParamDrainGracePeriod         = "drain-node-grace-period"
	ParamClearLabelsTimeout       = "clear-labels-timeout"
	ParamRemoveEtcdTimeout        = "remove-etcd-timeout"
	ParamEtcdReadyTimeout         = "etcd-ready-timeout"
	ParamShutdownKubeletTimeout   = "shutdown-kubelet-timeout"
	ParamDestroyNodeTimeout       = "destroy-node-timeout"
	ParamPowerOffTimeout          = "power-off-timeout"
	ParamReleaseNodeTimeout       = "release-node-timeout"
	ParamRemoveFromClusterTimeout = "remove-from-cluster-timeout"
	ParamPreserveLocalStorage     = "preserve-local-storage"
	ParamAllowIntermediateCommits = "allow-intermediate-commits"
	ParamTargetRevision           = "target-revision"
	// FieldNode, FieldAddresses and FieldLabels name Request fields that
	// have no query parameter.
	FieldNode      = "node"
	FieldAddresses = "addresses"
	FieldLabels    = "labels"
)

// Target says which design revision a redeploy uses after the teardown
// (target-revision in Airship's teardown design). The zero value is the
// design's default, successful-site-action.
type Target uint8

const (
	// TargetSuccessfulSiteAction is the newest revision tagged
	// site-action-success: the last known good design.
	TargetSuccessfulSiteAction Target = iota
	// TargetCommitted is the newest committed revision.
	TargetCommitted
	// TargetLastSiteAction is the newest revision tagged
	// site-action-success or site-action-failure.
	TargetLastSiteAction
)

var targetNames = [...]string{
	TargetSuccessfulSiteAction: "successful-site-action",
	TargetCommitted:            "committed",
	TargetLastSiteAction:       "last-site-action",
}

// String returns the target's name, as the teardown design spells it
// ("committed", ...).
func (t Target) String() string {
	return enum.Name(targetNames[:], t, "target")
}

// ParseTarget parses committed, successful-site-action or
// last-site-action (any case); "" is the default,
// TargetSuccessfulSiteAction.
func ParseTarget(s string) (Target, error) {
	if s == "" {
		return TargetSuccessfulSiteAction, nil
	}
	for i, n := range targetNames {
		if strings.EqualFold(s, n) {
			return Target(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not a target revision (want committed, successful-site-action, last-site-action or a revision number)", s)
}

// Timeouts bound the steps. A zero field takes its default; every field
// must be a whole, non-negative number of seconds, at most MaxTimeout.
type Timeouts struct {
	// Drain bounds the drain (kubectl drain --timeout; drain-node-timeout).
	// Default 3600 s.
	Drain time.Duration
	// DrainGracePeriod is given to every evicted pod
	// (drain-node-grace-period); it must be below Drain. Default 1800 s,
	// or half of Drain when Drain is set and the default would not be
	// below it.
	DrainGracePeriod time.Duration
	// ClearLabels bounds the label removal and the wait for the pods to
	// settle after it (clear-labels-timeout). Default 1800 s.
	ClearLabels time.Duration
	// RemoveEtcd bounds the removal of the node's etcd members, retries
	// included (remove-etcd-timeout). Default 1800 s.
	RemoveEtcd time.Duration
	// EtcdReady bounds the wait for the etcd clusters to be healthy
	// (etcd-ready-timeout). Default 600 s.
	EtcdReady time.Duration
	// ShutdownKubelet bounds the wait for the kubelet to stop reporting
	// (shutdown-kubelet-timeout; not in Airship's design). Default 600 s.
	ShutdownKubelet time.Duration
	// DestroyNode bounds the provisioner's wipe (destroy-node-timeout; not
	// in Airship's design). Default 3600 s.
	DestroyNode time.Duration
	// PowerOff bounds the verified power off through the fence levels
	// (power-off-timeout; not in Airship's design). Default 300 s.
	PowerOff time.Duration
	// ReleaseNode bounds the release from the provisioner
	// (release-node-timeout; not in Airship's design). Default 600 s.
	ReleaseNode time.Duration
	// RemoveFromCluster bounds the checks, the deletion of the Node and its
	// confirmation (remove-from-cluster-timeout; not in Airship's design).
	// Default 120 s.
	RemoveFromCluster time.Duration
}

// DefaultTimeouts returns every timeout at its default.
func DefaultTimeouts() Timeouts {
	return Timeouts{
		Drain: DefaultDrainTimeout, DrainGracePeriod: DefaultDrainGracePeriod,
		ClearLabels: DefaultClearLabelsTimeout, RemoveEtcd: DefaultRemoveEtcdTimeout,
		EtcdReady: DefaultEtcdReadyTimeout, ShutdownKubelet: DefaultShutdownKubeletTimeout,
		DestroyNode: DefaultDestroyNodeTimeout, PowerOff: DefaultPowerOffTimeout,
		ReleaseNode:       DefaultReleaseNodeTimeout,
		RemoveFromCluster: DefaultRemoveFromClusterTimeout,
	}
}

// timeoutField is one field of Timeouts with its parameter name.
type timeoutField struct {
	param string
	p     *time.Duration
}

func (t *Timeouts) fields() []timeoutField {
	return []timeoutField{
		{ParamDrainTimeout, &t.Drain},
		{ParamDrainGracePeriod, &t.DrainGracePeriod},
		{ParamClearLabelsTimeout, &t.ClearLabels},
		{ParamRemoveEtcdTimeout, &t.RemoveEtcd},
		{ParamEtcdReadyTimeout, &t.EtcdReady},
		{ParamShutdownKubeletTimeout, &t.ShutdownKubelet},
		{ParamDestroyNodeTimeout, &t.DestroyNode},
		{ParamPowerOffTimeout, &t.PowerOff},
		{ParamReleaseNodeTimeout, &t.ReleaseNode},
		{ParamRemoveFromClusterTimeout, &t.RemoveFromCluster},
	}
}

// WithDefaults returns t with every zero field at its default. A drain
// timeout set without a grace period, at or below the default grace period,
// gets half of itself as grace period (whole seconds, so 0 for a 1 s drain:
// pods are deleted at once), so that a short drain asked alone works instead
// of failing validation on a default.
func (t Timeouts) WithDefaults() Timeouts {
	graceGiven := t.DrainGracePeriod != 0
	d := DefaultTimeouts()
	df := d.fields()
	for i, f := range t.fields() {
		if *f.p == 0 {
			*f.p = *df[i].p
		}
	}
	if !graceGiven && t.DrainGracePeriod >= t.Drain {
		t.DrainGracePeriod = (t.Drain / 2).Truncate(time.Second)
	}
	return t
}

// Request asks for one node to be torn down: the parameters of the teardown
// design's redeploy_server action and decommission API.
type Request struct {
	// Node is the node's name (the teardown design's node_id, its hostname).
	// Required: a DNS subdomain, as Kubernetes names nodes.
	Node string
	// PreserveLocalStorage wipes only the OS disk instead of every local
	// disk (preserve-local-storage).
	PreserveLocalStorage bool
	// Target chooses the design revision (target-revision). Ignored when
	// Revision is set.
	Target Target
	// Revision, when not zero, names the design revision by its ID instead
	// of Target (target-revision=<number>).
	Revision int
	// AllowIntermediateCommits skips, with a log record, the refusal of
	// committed revisions without a site-action tag between the last site
	// action and the target (allow-intermediate-commits).
	AllowIntermediateCommits bool
	// Timeouts bound the steps; zero fields take their defaults.
	Timeouts Timeouts
	// Addresses are more names and IP addresses of the node, beside the
	// ones its Node object lists, by which its etcd members are found
	// (peer or client URL hosts). Optional.
	Addresses []string
	// Labels, when not empty, are the only label keys clear-labels removes
	// (and the only ones remove-from-cluster's check looks for). Empty: every
	// label but the kubelet's own (see ClearableLabels).
	Labels []string
}

// Validate checks the request without any I/O: the node name, every
// timeout (whole non-negative seconds, at most MaxTimeout), the grace
// period below the drain timeout (after defaults), the target, the
// addresses and the label keys. It returns nil or every problem found,
// joined, each an *Error with Reason BadRequest naming the field.
func (r Request) Validate() error {
	var errs []error
	bad := func(field string, format string, args ...any) {
		errs = append(errs, &Error{Node: r.Node, Field: field, Reason: ReasonBadRequest, Err: fmt.Errorf(format, args...)})
	}
	if err := checkNodeName(r.Node); err != nil {
		bad(FieldNode, "%v", err)
	}
	for _, f := range r.Timeouts.fields() {
		switch d := *f.p; {
		case d < 0:
			bad(f.param, "%v is negative", d)
		case d%time.Second != 0:
			bad(f.param, "%v is not a whole number of seconds", d)
		case d > MaxTimeout:
			bad(f.param, "%v is more than the maximum of %v", d, MaxTimeout)
		}
	}
	if len(errs) == 0 {
		t := r.Timeouts.WithDefaults()
		if t.DrainGracePeriod >= t.Drain {
			bad(ParamDrainGracePeriod, "grace period %v must be less than the drain timeout %v", t.DrainGracePeriod, t.Drain)
		}
	}
	if int(r.Target) >= len(targetNames) {
		bad(ParamTargetRevision, "%v is not a target revision", r.Target)
	}
	if r.Revision < 0 {
		bad(ParamTargetRevision, "revision %d is negative", r.Revision)
	}
	for i, a := range r.Addresses {
		if err := checkAddress(a); err != nil {
			bad(fmt.Sprintf("%s[%d]", FieldAddresses, i), "%v", err)
		}
	}
	for i, k := range r.Labels {
		if err := checkLabelKey(k); err != nil {
			bad(fmt.Sprintf("%s[%d]", FieldLabels, i), "%v", err)
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns the request with its timeouts at their defaults and
// its slices copied.
func (r Request) withDefaults() Request {
	r.Timeouts = r.Timeouts.WithDefaults()
	r.Addresses = slices.Clone(r.Addresses)
	r.Labels = slices.Clone(r.Labels)
	return r
}

// ParseRequest reads a request from query parameters with the teardown
// design's names (drain-node-timeout, drain-node-grace-period,
// clear-labels-timeout, remove-etcd-timeout, etcd-ready-timeout,
// preserve-local-storage, allow-intermediate-commits, target-revision) and
// fencekit's (shutdown-kubelet-timeout, destroy-node-timeout,
// power-off-timeout, release-node-timeout, remove-from-cluster-timeout),
// for the node named by the path. The rules, strict because a misread parameter can wipe data or skip
// a check:
//
//   - timeouts are whole numbers of seconds, digits only (no sign, unit or
//     space), at most MaxTimeout; 0 asks for the default, as an absent
//     parameter does;
//   - booleans are true or false (any case); an empty value is refused;
//   - target-revision is committed, successful-site-action, last-site-action
//     or a revision number (at least 1);
//   - an unknown parameter, or one given twice, is refused, so that a
//     misspelt name is not silently ignored.
//
// It returns the request and nil, or a request with what could be read and
// every problem, joined, each an *Error with Reason BadRequest naming the
// parameter. The result of a nil error still needs Validate (ParseRequest
// calls it).
func ParseRequest(node string, q url.Values) (Request, error) {
	r := Request{Node: node}
	var errs []error
	bad := func(field string, err error) {
		errs = append(errs, &Error{Node: node, Field: field, Reason: ReasonBadRequest, Err: err})
	}
	timeouts := map[string]*time.Duration{}
	for _, f := range r.Timeouts.fields() {
		timeouts[f.param] = f.p
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		vs := q[k]
		field := clip(k)
		if k == "" {
			field = `""`
		}
		if len(vs) != 1 {
			bad(field, fmt.Errorf("given %d times (want once)", len(vs)))
			continue
		}
		v := vs[0]
		if p, ok := timeouts[k]; ok {
			d, err := parseSeconds(v)
			if err != nil {
				bad(k, err)
				continue
			}
			*p = d
			continue
		}
		switch k {
		case ParamPreserveLocalStorage, ParamAllowIntermediateCommits:
			b, err := parseBool(v)
			if err != nil {
				bad(k, err)
				continue
			}
			if k == ParamPreserveLocalStorage {
				r.PreserveLocalStorage = b
			} else {
				r.AllowIntermediateCommits = b
			}
		case ParamTargetRevision:
			if v != "" && v[0] >= '0' && v[0] <= '9' {
				n, err := parseWhole(v, 1<<31-1)
				if err != nil || n == 0 {
					bad(k, fmt.Errorf("%q is not a revision number (want a whole number from 1)", clip(v)))
					continue
				}
				r.Revision = int(n)
				continue
			}
			t, err := ParseTarget(v)
			if err != nil {
				bad(k, fmt.Errorf("%q is not a target revision (want committed, successful-site-action, last-site-action or a revision number)", clip(v)))
				continue
			}
			r.Target = t
		default:
			bad(field, errors.New("unknown parameter"))
		}
	}
	if len(errs) > 0 {
		return r, errors.Join(errs...)
	}
	return r, r.Validate()
}

// Query returns the request's query parameters, as ParseRequest reads
// them: every timeout that is set (in whole seconds), the booleans that are
// true, and the target revision unless it is the default. The node goes in
// the path; Addresses and Labels have no parameter and are left out.
func (r Request) Query() url.Values {
	q := url.Values{}
	for _, f := range r.Timeouts.fields() {
		if *f.p != 0 {
			q.Set(f.param, strconv.FormatInt(int64(*f.p/time.Second), 10))
		}
	}
	if r.PreserveLocalStorage {
		q.Set(ParamPreserveLocalStorage, "true")
	}
	if r.AllowIntermediateCommits {
		q.Set(ParamAllowIntermediateCommits, "true")
	}
	switch {
	case r.Revision != 0:
		q.Set(ParamTargetRevision, strconv.Itoa(r.Revision))
	case r.Target != TargetSuccessfulSiteAction:
		q.Set(ParamTargetRevision, r.Target.String())
	}
	return q
}

// parseSeconds parses a whole number of seconds.
func parseSeconds(v string) (time.Duration, error) {
	n, err := parseWhole(v, uint64(MaxTimeout/time.Second))
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number of seconds from 0 to %d", clip(v), uint64(MaxTimeout/time.Second))
	}
	return time.Duration(n) * time.Second, nil
}

// parseWhole parses digits only, up to max.
func parseWhole(v string, max uint64) (uint64, error) {
	if v == "" || len(v) > 20 {
		return 0, errors.New("not a whole number")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, errors.New("not a whole number")
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > max {
		return 0, errors.New("out of range")
	}
	return n, nil
}

// parseBool parses true or false, any case.
func parseBool(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (want true or false)", clip(v))
}

// clip shortens outside input quoted in an error.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// checkNodeName checks a Kubernetes node name: a DNS subdomain (RFC 1123),
// lower case letters, digits, '-' and '.', starting and ending with a letter
// or digit, at most 253 characters.
func checkNodeName(s string) error {
	if s == "" {
		return errors.New("the node name is required")
	}
	if !isDNSSubdomain(s) {
		return fmt.Errorf("%q is not a node name (a DNS subdomain: lower case letters, digits, '-' and '.', at most 253 characters)", clip(s))
	}
	return nil
}

func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
			if !alnum && (c != '-' || i == 0 || i == len(label)-1) {
				return false
			}
		}
	}
	return true
}

// checkAddress accepts an IP address or a host name (any case).
func checkAddress(s string) error {
	if _, err := netip.ParseAddr(s); err == nil {
		return nil
	}
	if isDNSSubdomain(strings.ToLower(s)) {
		return nil
	}
	return fmt.Errorf("%q is neither an IP address nor a host name", clip(s))
}

// checkLabelKey checks a Kubernetes label key: an optional DNS subdomain
// prefix and '/', then a name of at most 63 characters of letters, digits,
// '-', '_' and '.', starting and ending with a letter or digit.
func checkLabelKey(k string) error {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if !isDNSSubdomain(prefix) {
			return fmt.Errorf("label key %q: bad prefix", clip(k))
		}
		name = rest
	}
	if len(name) == 0 || len(name) > 63 {
		return fmt.Errorf("label key %q: the name must have 1 to 63 characters", clip(k))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(name)-1 || c != '-' && c != '_' && c != '.') {
			return fmt.Errorf("label key %q: bad name", clip(k))
		}
	}
	return nil
}
