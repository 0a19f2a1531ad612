package teardownhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/internal/strictjson"
	"github.com/fencekit/fencekit/teardown"
)

// The routes, as net/http patterns. The first seven are those of Airship's
// node teardown design (Promenade's API); destroy and redeploy are
// fencekit's, for the parts the design gives to other services (Drydock's
// destroy node, Shipyard's redeploy_server action).
const (
	PathDecommission      = "/nodes/{node_id}/decommission"
	PathDrain             = "/nodes/{node_id}/drain"
	PathClearLabels       = "/nodes/{node_id}/clear-labels"
	PathRemoveEtcd        = "/nodes/{node_id}/remove-etcd"
	PathEtcdHealth        = "/etcd-cluster-health-statuses"
	PathShutdownKubelet   = "/nodes/{node_id}/shutdown-kubelet"
	PathRemoveFromCluster = "/nodes/{node_id}/remove-from-cluster"
	PathDestroy           = "/nodes/{node_id}/destroy"
	PathRedeploy          = "/nodes/{node_id}/redeploy"
)

// Query parameter names of the per-step endpoints (the teardown design's
// "timeout" and "grace-period"), and of the etcd health query.
const (
	ParamTimeout     = "timeout"
	ParamGracePeriod = "grace-period"
	ParamDesignRef   = "design_ref"
)

// MaxBodyBytes bounds a request's body (a design reference).
const MaxBodyBytes = 64 << 10

// ReasonMethodNotAllowed is the reason of a 405 answer (not in Airship's
// design).
const ReasonMethodNotAllowed teardown.Reason = "MethodNotAllowed"

// body says what an endpoint's body is.
type body uint8

const (
	noBody   body = iota // "This POST has no message body"
	refBody              // a design reference, required
	anyQuery             // redeploy: no body, the whole request in the query
)

// endpoint is one POST route.
type endpoint struct {
	name   string
	path   string
	steps  []teardown.StepKind
	params map[string]string // the endpoint's parameter -> teardown's
	body   body
}

// same maps teardown's parameter names to themselves.
func same(names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = n
	}
	return m
}

var endpoints = []endpoint{
	{name: "decommission", path: PathDecommission, body: refBody,
		steps: []teardown.StepKind{teardown.StepDrain, teardown.StepClearLabels, teardown.StepRemoveEtcd, teardown.StepEtcdReady, teardown.StepShutdownKubelet},
		params: same(teardown.ParamDrainTimeout, teardown.ParamDrainGracePeriod, teardown.ParamClearLabelsTimeout,
			teardown.ParamRemoveEtcdTimeout, teardown.ParamEtcdReadyTimeout, teardown.ParamShutdownKubeletTimeout)},
	{name: "drain", path: PathDrain, steps: []teardown.StepKind{teardown.StepDrain},
		params: map[string]string{ParamTimeout: teardown.ParamDrainTimeout, ParamGracePeriod: teardown.ParamDrainGracePeriod}},
	{name: "clear-labels", path: PathClearLabels, steps: []teardown.StepKind{teardown.StepClearLabels},
		params: map[string]string{ParamTimeout: teardown.ParamClearLabelsTimeout}},
	{name: "remove-etcd", path: PathRemoveEtcd, body: refBody, steps: []teardown.StepKind{teardown.StepRemoveEtcd},
		params: map[string]string{ParamTimeout: teardown.ParamRemoveEtcdTimeout}},
	{name: "shutdown-kubelet", path: PathShutdownKubelet, steps: []teardown.StepKind{teardown.StepShutdownKubelet},
		params: map[string]string{ParamTimeout: teardown.ParamShutdownKubeletTimeout}},
	{name: "remove-from-cluster", path: PathRemoveFromCluster, steps: []teardown.StepKind{teardown.StepRemoveFromCluster},
		params: map[string]string{ParamTimeout: teardown.ParamRemoveFromClusterTimeout}},
	{name: "destroy", path: PathDestroy, body: refBody,
		steps: []teardown.StepKind{teardown.StepDestroyNode, teardown.StepPowerOff, teardown.StepReleaseNode},
		params: same(teardown.ParamPreserveLocalStorage, teardown.ParamDestroyNodeTimeout, teardown.ParamPowerOffTimeout,
			teardown.ParamReleaseNodeTimeout)},
	{name: "redeploy", path: PathRedeploy, body: anyQuery},
}

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Auth authenticates every request before anything is read or done
	// (apiauth.Tokens, apiauth.HMAC). Required: without it every request
	// is refused with 401.
	Auth apiauth.Verifier
	// Logger receives one record per request (never its credentials);
	// nil discards them.
	Logger *slog.Logger
	// Now is the clock of the busy answers; default time.Now.
	Now func() time.Time
}

// server is the handler's state.
type server struct {
	x    *teardown.Executor
	log  *slog.Logger
	now  func() time.Time
	mu   sync.Mutex
	busy map[string]running // node -> the request running for it
}

// running is a request under way for a node.
type running struct {
	endpoint string
	since    time.Time
}

// NewHandler returns the teardown API over the executor: Airship's node
// teardown design's endpoints, each answering with an Airship status
// response (teardown.Status) as JSON:
//
//	POST /nodes/{node_id}/decommission      design ref body; drain-node-timeout, drain-node-grace-period,
//	                                        clear-labels-timeout, remove-etcd-timeout, etcd-ready-timeout,
//	                                        shutdown-kubelet-timeout
//	POST /nodes/{node_id}/drain             timeout, grace-period
//	POST /nodes/{node_id}/clear-labels      timeout
//	POST /nodes/{node_id}/remove-etcd       design ref body; timeout
//	GET  /etcd-cluster-health-statuses      design_ref (required)
//	POST /nodes/{node_id}/shutdown-kubelet  timeout
//	POST /nodes/{node_id}/remove-from-cluster  timeout
//
// and fencekit's two for the rest of the teardown:
//
//	POST /nodes/{node_id}/destroy    design ref body; preserve-local-storage, destroy-node-timeout,
//	                                 power-off-timeout, release-node-timeout (wipe, verified power
//	                                 off, release: Drydock's destroy node)
//	POST /nodes/{node_id}/redeploy   every parameter of teardown.ParseRequest (the whole plan:
//	                                 Shipyard's redeploy_server action)
//
// The codes and reasons are the design's: 200 Success; 400 BadRequest (a
// bad or unknown parameter, named in the details; a body where none is
// taken) or MissingDesignRef; 404 NotFound (the node, or no etcd cluster);
// 409 Conflict (remove-from-cluster's checks, or another request running
// for the same node); 412 PreconditionFailed (a revision that does not
// exist or is not committed); 500 with the step's reason, or
// DisassociateStepFailure for the decommission. A caller Auth does not
// accept gets 401 Unauthorized and nothing is done.
//
// Requests are synchronous, as the design's Promenade is: an answer comes
// when the steps are over, which may take an hour (a drain's default
// timeout), so the http.Server's WriteTimeout must not be shorter than the
// longest teardown asked for. The request's context bounds the steps: a
// caller that goes away stops them, and the same request again continues
// where they stopped, every step finding what is already done.
func NewHandler(x *teardown.Executor, o HandlerOptions) http.Handler {
	s := &server{x: x, log: o.Logger, now: o.Now, busy: map[string]running{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	mux := http.NewServeMux()
	for _, e := range endpoints {
		mux.HandleFunc("POST "+e.path, func(w http.ResponseWriter, r *http.Request) { s.post(w, r, e) })
		mux.HandleFunc(e.path, methodNotAllowed(http.MethodPost))
	}
	mux.HandleFunc("GET "+PathEtcdHealth, s.etcdHealth)
	mux.HandleFunc(PathEtcdHealth, methodNotAllowed(http.MethodGet))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, teardown.NewStatus(teardown.ReasonNotFound, "no such endpoint: "+clip(r.URL.Path), nil))
	})
	return apiauth.Require(o.Auth, mux, func(w http.ResponseWriter, r *http.Request, err error) {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "teardown API: request refused",
			slog.String("method", r.Method), slog.String("path", clip(r.URL.Path)), slog.String("remote", r.RemoteAddr),
			slog.String("error", err.Error()))
		writeStatus(w, teardown.NewStatus(teardown.ReasonUnauthorized, err.Error(), nil))
	})
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		st := teardown.NewStatus(ReasonMethodNotAllowed, r.Method+" is not allowed; use "+allow, nil)
		st.Code = http.StatusMethodNotAllowed
		writeStatus(w, st)
	}
}

// badRequest returns a 400 naming the node and the field.
func badRequest(node, field string, reason teardown.Reason, err error) error {
	return &teardown.Error{Node: node, Field: field, Reason: reason, Err: err}
}

// post serves one POST endpoint.
func (s *server) post(w http.ResponseWriter, r *http.Request, e endpoint) {
	start := s.now()
	node := r.PathValue("node_id")
	st := s.serve(r, e, node)
	s.log.LogAttrs(r.Context(), levelOf(st), "teardown API: "+e.name,
		slog.String("node", node), slog.Int("code", st.Code), slog.String("reason", string(st.Reason)),
		slog.Duration("duration", s.now().Sub(start)))
	writeStatus(w, st)
}

func levelOf(st *teardown.Status) slog.Level {
	switch {
	case st.Code >= 500:
		return slog.LevelError
	case st.Code >= 400:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// serve reads the request, takes the node, plans and runs.
func (s *server) serve(r *http.Request, e endpoint, node string) *teardown.Status {
	ref, refErr := readBody(r, e, node)
	req, err := s.request(r.URL.Query(), e, node)
	if err = errors.Join(refErr, err); err != nil {
		return teardown.StatusOf(err)
	}
	release, busy := s.take(node, e.name)
	if busy != nil {
		return busy
	}
	defer release()

	ctx := r.Context()
	var plan *teardown.Plan
	if e.body == anyQuery {
		plan, err = s.x.Plan(ctx, req)
	} else {
		plan, err = s.planSteps(ctx, req, ref, e)
	}
	if err != nil {
		return teardown.StatusOf(err)
	}
	rep := s.x.Run(ctx, plan)
	if len(rep.Steps) == 1 {
		return rep.Steps[0].Status()
	}
	st := rep.Status()
	if rep.Succeeded() && e.body != anyQuery {
		st.Message = fmt.Sprintf("%s of node %s: %s", e.name, node, rep.Counts())
	}
	return st
}

// request reads the endpoint's query parameters into a teardown.Request:
// the endpoint's names are translated to teardown.ParseRequest's, and the
// errors name the endpoint's.
func (s *server) request(q url.Values, e endpoint, node string) (teardown.Request, error) {
	if e.params == nil { // redeploy: ParseRequest's own names
		return teardown.ParseRequest(node, q)
	}
	tq := url.Values{}
	back := map[string]string{}
	var unknown []error
	for _, k := range slices.Sorted(maps.Keys(q)) {
		t, ok := e.params[k]
		if !ok {
			unknown = append(unknown, badRequest(node, clip(k), teardown.ReasonBadRequest,
				fmt.Errorf("unknown parameter of %s (want one of %s)", e.name, namesOf(e.params))))
			continue
		}
		tq[t] = q[k]
		back[t] = k
	}
	req, err := teardown.ParseRequest(node, tq)
	for _, leaf := range leaves(err) {
		var te *teardown.Error
		if errors.As(leaf, &te) {
			if k, ok := back[te.Field]; ok {
				te.Field = k
			}
		}
	}
	return req, errors.Join(append(unknown, err)...)
}

// planSteps plans the endpoint's steps. The design reference names the
// revision; with a revision store it must exist and be committed (412
// otherwise). The intermediate-commits check of a redeploy is not made:
// it is the redeploy's (Shipyard's) check, not one of its steps'.
func (s *server) planSteps(ctx context.Context, req teardown.Request, ref int, e endpoint) (*teardown.Plan, error) {
	x := *s.x
	x.Revisions = nil
	plan, err := x.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	plan = plan.Only(e.steps...)
	if ref == 0 {
		return plan, nil
	}
	plan.Revision = ref
	if s.x.Revisions == nil {
		return plan, nil
	}
	revs, err := s.x.Revisions.Revisions(ctx)
	if err != nil {
		return nil, &teardown.Error{Node: req.Node, Reason: teardown.ReasonInternalError, Err: fmt.Errorf("read the design revisions: %w", err)}
	}
	if _, err := teardown.SelectRevision(revs, 0, ref); err != nil {
		return nil, &teardown.Error{Node: req.Node, Field: "href", Reason: teardown.ReasonPreconditionFailed, Err: err}
	}
	plan.Notes = slices.DeleteFunc(plan.Notes, func(n string) bool { return n == noStoreNote })
	return plan, nil
}

// noStoreNote is the note teardown.Executor.Plan makes without a revision
// store; planSteps drops it when it checked the revision itself.
const noStoreNote = "no revision store: the target revision is not checked"

// readBody reads the endpoint's body: none, or a design reference. It
// returns the referenced revision.
func readBody(r *http.Request, e endpoint, node string) (int, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return 0, badRequest(node, "body", teardown.ReasonBadRequest, fmt.Errorf("reading the body: %w", err))
	}
	if len(raw) > MaxBodyBytes {
		return 0, badRequest(node, "body", teardown.ReasonBadRequest, fmt.Errorf("more than %d bytes", MaxBodyBytes))
	}
	if e.body != refBody {
		if len(bytes.TrimSpace(raw)) > 0 {
			return 0, badRequest(node, "body", teardown.ReasonBadRequest, fmt.Errorf("%s takes no body", e.name))
		}
		return 0, nil
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return 0, badRequest(node, "body", teardown.ReasonMissingDesignRef,
			fmt.Errorf("%s needs the design reference as its body ({\"rel\":\"design\",\"href\":\".../revisions/<id>/rendered-documents\"})", e.name))
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return 0, badRequest(node, "Content-Type", teardown.ReasonBadRequest, fmt.Errorf("%q is not application/json", clip(ct)))
		}
	}
	var ref DesignRef
	if err := strictjson.Decode(raw, 1, &ref); err != nil {
		return 0, badRequest(node, "body", teardown.ReasonBadRequest, fmt.Errorf("not a design reference: %w", err))
	}
	if ref.Href == "" {
		return 0, badRequest(node, "href", teardown.ReasonMissingDesignRef, errors.New("the design reference has no href"))
	}
	n, err := ref.Revision()
	if err != nil {
		field := "href"
		if ref.Rel != RelDesign {
			field = "rel"
		}
		return 0, badRequest(node, field, teardown.ReasonBadRequest, err)
	}
	return n, nil
}

// take marks the node busy, or returns the 409 of a request running for it.
func (s *server) take(node, name string) (release func(), busy *teardown.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.busy[node]; ok {
		err := &teardown.Error{Node: node, Reason: teardown.ReasonConflict,
			Err: fmt.Errorf("a %s request for the node is running since %s; send this one again when it is over",
				b.endpoint, b.since.UTC().Format(time.RFC3339))}
		return nil, teardown.StatusOf(err)
	}
	s.busy[node] = running{endpoint: name, since: s.now()}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.busy, node)
	}, nil
}

// etcdHealth serves GET /etcd-cluster-health-statuses.
func (s *server) etcdHealth(w http.ResponseWriter, r *http.Request) {
	st := func() *teardown.Status {
		q := r.URL.Query()
		for k, v := range q {
			if k != ParamDesignRef {
				return teardown.StatusOf(badRequest("", clip(k), teardown.ReasonBadRequest, errors.New("unknown parameter (want design_ref)")))
			}
			if len(v) != 1 {
				return teardown.StatusOf(badRequest("", k, teardown.ReasonBadRequest, fmt.Errorf("given %d times (want once)", len(v))))
			}
		}
		href := q.Get(ParamDesignRef)
		if href == "" {
			return teardown.StatusOf(badRequest("", ParamDesignRef, teardown.ReasonMissingDesignRef, errors.New("the design_ref parameter is required")))
		}
		rev, err := ParseDesignRef(href)
		if err != nil {
			return teardown.StatusOf(badRequest("", ParamDesignRef, teardown.ReasonBadRequest, err))
		}
		if s.x.Revisions != nil {
			revs, err := s.x.Revisions.Revisions(r.Context())
			if err != nil {
				return teardown.StatusOf(fmt.Errorf("read the design revisions: %w", err))
			}
			if _, err := teardown.SelectRevision(revs, 0, rev); err != nil {
				return teardown.StatusOf(badRequest("", ParamDesignRef, teardown.ReasonPreconditionFailed, err))
			}
		}
		if len(s.x.Etcd) == 0 {
			return teardown.StatusOf(&teardown.Error{Reason: teardown.ReasonNotFound, Err: errors.New("no etcd cluster is configured")})
		}
		return s.x.EtcdHealth(r.Context())
	}()
	s.log.LogAttrs(r.Context(), levelOf(st), "teardown API: etcd-cluster-health-statuses",
		slog.Int("code", st.Code), slog.String("reason", string(st.Reason)))
	writeStatus(w, st)
}

// writeStatus writes a status response as JSON with its code.
func writeStatus(w http.ResponseWriter, st *teardown.Status) {
	b, err := json.Marshal(st)
	if err != nil {
		st = teardown.NewStatus(teardown.ReasonInternalError, "cannot encode the answer", nil)
		b, _ = json.Marshal(st)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(st.Code)
	_, _ = w.Write(append(b, '\n'))
}

// leaves returns the errors joined in err, or err itself.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// namesOf lists an endpoint's parameters.
func namesOf(params map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(params)), ", ")
}
