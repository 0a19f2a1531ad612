// Package configwebhook refuses a bad fence configuration at admission: a
// validating admission webhook, served by the fence controller, that runs
// the controller's own strict parse and validation (config.ValidateConfigMaps
// against the controller's driver registry) on a write of a fence ConfigMap
// (fence-config-NODE, fence-method-..., fence-method-template-...), with
// the namespace's other fence ConfigMaps as they stand, and refuses the
// write when it adds an error: a bad key, a missing parameter, a method a
// node names that no ConfigMap defines, a template deleted while methods
// still use it. The refusal names the ConfigMap, line, key, node and field
// as the parser does, and never a credential (the parser's errors hold
// none). A write that adds no error is admitted, even while other
// ConfigMaps have errors of their own: a person fixing one ConfigMap is
// never held up by another.
//
// Its ValidatingWebhookConfiguration (deploy/config-webhook.yaml) selects
// the controller's namespace and the fence ConfigMaps by name, and fails
// open (failurePolicy Ignore): while no controller answers, a write is
// admitted, and the controller, once back, reports what is wrong as it
// always does (FenceConfigError events, the NodeFence of a node it cannot
// fence), acting on no node whose configuration has an error. Failing
// closed would forbid fixing the configuration while the controller is
// down.
package configwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// Path is where the webhook is served.
const Path = "/validate-fence-configmap"

// Prefix is the name prefix of the fence ConfigMaps.
const Prefix = "fence-"

// Handler serves the webhook.
type Handler struct {
	// Reader lists the ConfigMaps of Namespace (a manager's client, or
	// its APIReader). Required.
	Reader client.Reader
	// Namespace is the controller's namespace: a ConfigMap of another is
	// admitted without a look.
	Namespace string
	// Registry checks the methods' drivers and keys; nil means
	// fence.DefaultRegistry.
	Registry *fence.Registry
	// Timeout bounds the list (default 5 s, under the API server's
	// 10 s for the webhook).
	Timeout time.Duration
	// Logger receives a line per refusal (discarded when nil).
	Logger *slog.Logger
}

// ServeHTTP answers an admission.k8s.io/v1 AdmissionReview.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp := h.Review(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Review decides on one request.
func (h *Handler) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Kind != "ConfigMap" || req.Namespace != h.Namespace || !strings.HasPrefix(req.Name, Prefix) {
		return allow
	}
	var incoming *corev1.ConfigMap
	if req.Operation != admissionv1.Delete {
		incoming = &corev1.ConfigMap{}
		if err := json.Unmarshal(req.Object.Raw, incoming); err != nil {
			return deny(http.StatusBadRequest, fmt.Sprintf("ConfigMap %s/%s: not a ConfigMap: %v", req.Namespace, req.Name, err))
		}
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var l corev1.ConfigMapList
	if err := h.Reader.List(lctx, &l, client.InNamespace(h.Namespace)); err != nil {
		// Not a verdict on the write: the API server applies the
		// failure policy it was given for an error.
		return deny(http.StatusServiceUnavailable, "the fence ConfigMaps cannot be read to check the write: "+err.Error())
	}
	var before, after []config.ConfigMap
	for i := range l.Items {
		cm := &l.Items[i]
		if !strings.HasPrefix(cm.Name, Prefix) {
			continue
		}
		before = append(before, config.ConfigMap{Name: cm.Name, Namespace: cm.Namespace, Data: cm.Data})
		if cm.Name != req.Name {
			after = append(after, config.ConfigMap{Name: cm.Name, Namespace: cm.Namespace, Data: cm.Data})
		}
	}
	if incoming != nil {
		after = append(after, config.ConfigMap{Name: req.Name, Namespace: req.Namespace, Data: incoming.Data})
	}
	added := subtract(messages(h.validate(after)), messages(h.validate(before)))
	if len(added) == 0 {
		return allow
	}
	verb := "writing"
	if req.Operation == admissionv1.Delete {
		verb = "deleting"
	}
	msg := fmt.Sprintf("%s ConfigMap %s/%s would break the fence configuration: %s", verb, req.Namespace, req.Name, strings.Join(added, "; "))
	if h.Logger != nil {
		h.Logger.Info("fence configuration refused at admission", "configmap", req.Name, "operation", string(req.Operation),
			"user", req.UserInfo.Username, "errors", len(added))
	}
	return deny(http.StatusUnprocessableEntity, msg)
}

func (h *Handler) validate(cms []config.ConfigMap) error {
	slices.SortFunc(cms, func(a, b config.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	return config.ValidateConfigMaps(cms, h.Registry)
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: msg}}
}

// messages returns the messages of the errors joined in err.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, messages(e)...)
		}
		return out
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		return []string{ce.Error()}
	}
	return []string{err.Error()}
}

// subtract returns the messages of a not in b, in a's order, once each.
func subtract(a, b []string) []string {
	var out []string
	for _, m := range a {
		if !slices.Contains(b, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}
