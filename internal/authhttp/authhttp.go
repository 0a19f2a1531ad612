// Package authhttp serves the programs' metrics and profiles to those the
// API server says may read them, as controller-runtime's authenticated
// metrics server does: over TLS (a certificate from a directory in
// cert-manager's layout, reloaded when it changes, or a self-signed one),
// the request's bearer token checked with a TokenReview, and the user's
// right to the request's verb on its path with a SubjectAccessReview of a
// non-resource URL (RBAC: nonResourceURLs ["/metrics"], verbs ["get"]).
// No token, or one the API server does not accept, is 401; a user without
// the right is 403; a review that cannot be made is 503, never an allow.
package authhttp

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// RBAC of the programs that serve through Wrap: the reviews.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options tune Wrap.
type Options struct {
	// Client makes the reviews. Required.
	Client kubernetes.Interface
	// AllowTTL and DenyTTL are how long an answer is kept: 1 min and
	// 10 s by default (a token review for its whole TTL, a revoked role
	// seen within it).
	AllowTTL, DenyTTL time.Duration
	// Timeout bounds each review (default 10 s).
	Timeout time.Duration
	// Logger receives a line per refusal (discarded when nil). Tokens are
	// never logged.
	Logger *slog.Logger
}

// Wrap returns h behind the reviews.
func Wrap(h http.Handler, o Options) http.Handler {
	if o.AllowTTL <= 0 {
		o.AllowTTL = time.Minute
	}
	if o.DenyTTL <= 0 {
		o.DenyTTL = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &guard{h: h, o: o, users: map[[32]byte]cached[*authenticationv1.UserInfo]{}, rights: map[string]cached[bool]{}}
}

type cached[T any] struct {
	v     T
	until time.Time
}

type guard struct {
	h http.Handler
	o Options

	mu     sync.Mutex
	users  map[[32]byte]cached[*authenticationv1.UserInfo] // token hash -> user (nil: refused)
	rights map[string]cached[bool]                         // user, groups, verb, path -> allowed
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencekit"`)
		http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
		return
	}
	user, err := g.authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		g.o.Logger.Warn("authhttp: token review failed", "path", r.URL.Path, "error", err)
		http.Error(w, "the token cannot be reviewed now", http.StatusServiceUnavailable)
		return
	}
	if user == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencekit"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	verb := strings.ToLower(r.Method)
	if verb == "head" {
		verb = "get"
	}
	allowed, err := g.authorize(r.Context(), user, verb, r.URL.Path)
	if err != nil {
		g.o.Logger.Warn("authhttp: access review failed", "user", user.Username, "path", r.URL.Path, "error", err)
		http.Error(w, "the access cannot be reviewed now", http.StatusServiceUnavailable)
		return
	}
	if !allowed {
		g.o.Logger.Info("authhttp: refused", "user", user.Username, "verb", verb, "path", r.URL.Path)
		http.Error(w, fmt.Sprintf("Forbidden: %s may not %s %s", user.Username, verb, r.URL.Path), http.StatusForbidden)
		return
	}
	g.h.ServeHTTP(w, r)
}

// authenticate returns the token's user, nil when the API server does not
// accept it.
func (g *guard) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	g.mu.Lock()
	if c, ok := g.users[key]; ok && now.Before(c.until) {
		g.mu.Unlock()
		return c.v, nil
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	tr, err := g.o.Client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	var user *authenticationv1.UserInfo
	ttl := g.o.DenyTTL
	if tr.Status.Authenticated {
		user, ttl = &tr.Status.User, g.o.AllowTTL
	}
	g.mu.Lock()
	g.prune(now)
	g.users[key] = cached[*authenticationv1.UserInfo]{user, now.Add(ttl)}
	g.mu.Unlock()
	return user, nil
}

// authorize reports whether user may verb the non-resource URL path.
func (g *guard) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := user.Username + "\x00" + user.UID + "\x00" + strings.Join(user.Groups, ",") + "\x00" + verb + "\x00" + path
	now := time.Now()
	g.mu.Lock()
	if c, ok := g.rights[key]; ok && now.Before(c.until) {
		g.mu.Unlock()
		return c.v, nil
	}
	g.mu.Unlock()
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	sar, err := g.o.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	ok := sar.Status.Allowed && !sar.Status.Denied
	ttl := g.o.DenyTTL
	if ok {
		ttl = g.o.AllowTTL
	}
	g.mu.Lock()
	g.prune(now)
	g.rights[key] = cached[bool]{ok, now.Add(ttl)}
	g.mu.Unlock()
	return ok, nil
}

// prune drops the answers past their time once the caches grow, with
// g.mu held: a stream of bad tokens cannot grow them without bound.
func (g *guard) prune(now time.Time) {
	if len(g.users)+len(g.rights) < 1024 {
		return
	}
	for k, c := range g.users {
		if !now.Before(c.until) {
			delete(g.users, k)
		}
	}
	for k, c := range g.rights {
		if !now.Before(c.until) {
			delete(g.rights, k)
		}
	}
	if len(g.users) >= 1024 {
		clear(g.users)
	}
	if len(g.rights) >= 1024 {
		clear(g.rights)
	}
}

// TLSConfig returns the server's TLS configuration: the certificate
// tls.crt and its key tls.key of certDir (cert-manager's layout; reloaded
// when the files change, until ctx ends), or, with certDir empty, a
// self-signed certificate for host (and, when host is an address,
// loopback) made now.
func TLSConfig(ctx context.Context, certDir, host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certDir != "" {
		w, err := certwatcher.New(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
		if err != nil {
			return nil, fmt.Errorf("the certificate of %s: %w", certDir, err)
		}
		go func() { _ = w.Start(ctx) }()
		cfg.GetCertificate = w.GetCertificate
		return cfg, nil
	}
	if host == "" {
		host = "localhost"
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return nil, fmt.Errorf("a self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("a self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}
