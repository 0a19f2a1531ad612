// Package confirmation is the record of who confirmed a node off: the proof
// the fence controller asks for before it acts on a person's confirmation
// (a NodeFence's spec.confirmation), whatever admission policy was or was
// not in force when the confirmation was written.
//
// A NodeFence's spec can be written by anyone who may patch it, and an
// admission policy checks a write only while it is in force: a
// confirmation written while the policy was absent, only warned, or
// narrowed would otherwise be honoured later under someone else's name. The
// API server records who created a CertificateSigningRequest in its spec
// (username, uid, groups, extra), from the authenticated request, whatever
// the creator wrote: no policy is needed to trust it. So a person who
// confirms (kubectl fence confirm) first creates a CertificateSigningRequest
// with this package's signer name (nobody signs it) whose request names the
// node, the incident and a digest of the reason (Request), then writes the
// confirmation naming it (spec.confirmation.request). The controller reads
// the request back from the API server (Read), checks that the API server
// recorded the confirmation's by as its creator and that it names this
// confirmation, and asks the API server whether that user may confirm
// (a SubjectAccessReview for the verb confirm on the NodeFence): only then
// is the node counted fenced on the person's word.
//
// The request is never approved or signed: kube-controller-manager deletes
// such requests after 24 hours; a confirmation must be acted on before
// (the controller does it within seconds).
package confirmation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SignerName is the signer of the CertificateSigningRequests that record a
// confirmation. No signer serves it: the requests stay pending, and only
// their creator, as the API server recorded it, matters.
const SignerName = "fencekit.io/person-confirmation"

// Verb is the RBAC verb on nodefences that a confirmer needs (ClusterRole
// fencekit-confirm of deploy/confirm.yaml).
const Verb = "confirm"

// scheme and opaque name the one URI the request carries:
// fencekit:confirmation?node=...&incident=...&reason-sha256=...
const (
	scheme = "fencekit"
	opaque = "confirmation"
)

// Claim is what a request says was confirmed.
type Claim struct {
	// Node is the node (and its NodeFence) confirmed off.
	Node string
	// Incident is the incident confirmed (the NodeFence's
	// status.incident), to the microsecond.
	Incident time.Time
	// Reason is what the person checked; the request carries its SHA-256.
	Reason string
}

// ErrNotAClaim means a CertificateSigningRequest is not a confirmation's
// record: another signer, a request that does not parse or is not signed
// by its key, or a URI that is not this package's.
var ErrNotAClaim = errors.New("not a record of a confirmation")

// Request returns a CertificateSigningRequest that records c, under a
// generated name (its creator, once created, is whoever the API server
// authenticated). Its key is made for it and thrown away.
func Request(c Claim) (*certificatesv1.CertificateSigningRequest, error) {
	if c.Node == "" || c.Reason == "" || c.Incident.IsZero() {
		return nil, errors.New("confirmation: a claim names its node, incident and reason")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "fencekit.io confirmation of node " + c.Node},
		URIs:    []*url.URL{claimURI(c)},
	}, key)
	if err != nil {
		return nil, err
	}
	name := "fencekit-confirm-" + c.Node
	if len(name) > 200 {
		name = name[:200]
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-",
			Labels: map[string]string{"app.kubernetes.io/name": "fencekit-confirmation"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: SignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
		},
	}, nil
}

func claimURI(c Claim) *url.URL {
	q := url.Values{}
	q.Set("node", c.Node)
	q.Set("incident", c.Incident.UTC().Truncate(time.Microsecond).Format(metav1.RFC3339Micro))
	q.Set("reason-sha256", digest(c.Reason))
	return &url.URL{Scheme: scheme, Opaque: opaque, RawQuery: q.Encode()}
}

func digest(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// Read returns what csr claims: the node, the incident, and the SHA-256 of
// the reason, in hex. Its creator is csr.Spec.Username, which the API
// server wrote. An error wraps ErrNotAClaim.
func Read(csr *certificatesv1.CertificateSigningRequest) (node string, incident time.Time, reasonSHA256 string, err error) {
	bad := func(format string, args ...any) (string, time.Time, string, error) {
		return "", time.Time{}, "", fmt.Errorf("%w: CertificateSigningRequest %s: %s", ErrNotAClaim, csr.Name, fmt.Sprintf(format, args...))
	}
	if csr.Spec.SignerName != SignerName {
		return bad("its signer is %q, not %s", csr.Spec.SignerName, SignerName)
	}
	block, rest := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" || len(rest) > 0 {
		return bad("its request is not one PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return bad("its request does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return bad("its request is not signed by its key: %v", err)
	}
	if len(req.URIs) != 1 || len(req.DNSNames)+len(req.EmailAddresses)+len(req.IPAddresses) > 0 {
		return bad("its request does not carry exactly one URI and nothing else")
	}
	u := req.URIs[0]
	if u.Scheme != scheme || u.Opaque != opaque || u.Fragment != "" {
		return bad("its URI is not a fencekit confirmation")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("its URI's query does not parse")
	}
	for _, k := range []string{"node", "incident", "reason-sha256"} {
		if len(q[k]) != 1 {
			return bad("its URI names %s %d times, not once", k, len(q[k]))
		}
	}
	if len(q) != 3 {
		return bad("its URI names more than the node, the incident and the reason")
	}
	incident, err = time.Parse(metav1.RFC3339Micro, q.Get("incident"))
	if err != nil {
		return bad("its incident does not parse")
	}
	return q.Get("node"), incident, q.Get("reason-sha256"), nil
}

// Names reports whether csr records the claim c: its node, its incident to
// the microsecond and its reason exactly; when not, why. An error wraps
// ErrNotAClaim.
func Names(csr *certificatesv1.CertificateSigningRequest, c Claim) error {
	node, incident, reason, err := Read(csr)
	switch {
	case err != nil:
		return err
	case node != c.Node:
		return fmt.Errorf("%w: CertificateSigningRequest %s confirms node %s, not %s", ErrNotAClaim, csr.Name, node, c.Node)
	case !incident.Equal(c.Incident.Truncate(time.Microsecond)):
		return fmt.Errorf("%w: CertificateSigningRequest %s confirms the incident that began %s, not %s", ErrNotAClaim, csr.Name,
			incident.UTC().Format(time.RFC3339Nano), c.Incident.UTC().Format(time.RFC3339Nano))
	case reason != digest(c.Reason):
		return fmt.Errorf("%w: CertificateSigningRequest %s was made for another reason than the confirmation's", ErrNotAClaim, csr.Name)
	}
	return nil
}
