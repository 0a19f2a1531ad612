package confirmation_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/kube/confirmation"
)

func TestRequestNamesItsClaim(t *testing.T) {
	at := time.Date(2026, 11, 26, 18, 9, 11, 123456789, time.UTC)
	c := confirmation.Claim{Node: "node-a", Incident: at, Reason: "rack B7 has no power, checked on site"}
	csr, err := confirmation.Request(c)
	require.NoError(t, err)
	assert.Equal(t, confirmation.SignerName, csr.Spec.SignerName)
	assert.Equal(t, "fencekit-confirm-node-a-", csr.GenerateName)
	csr.Name = "fencekit-confirm-node-a-x1"

	node, incident, _, err := confirmation.Read(csr)
	require.NoError(t, err)
	assert.Equal(t, "node-a", node)
	assert.True(t, incident.Equal(at.Truncate(time.Microsecond)), "to the microsecond, as a NodeFence keeps it")
	require.NoError(t, confirmation.Names(csr, c))

	for name, d := range map[string]confirmation.Claim{
		"node":     {Node: "node-b", Incident: at, Reason: c.Reason},
		"incident": {Node: "node-a", Incident: at.Add(time.Microsecond), Reason: c.Reason},
		"reason":   {Node: "node-a", Incident: at, Reason: c.Reason + "."},
	} {
		err := confirmation.Names(csr, d)
		assert.ErrorIs(t, err, confirmation.ErrNotAClaim, name)
	}
	_, err = confirmation.Request(confirmation.Claim{Node: "node-a", Incident: at})
	assert.Error(t, err, "no reason")
}

// A request that is not one of ours, or not signed by its key, or that
// carries more than its one URI, is not a claim.
func TestReadRefusesWhatIsNotAClaim(t *testing.T) {
	at := time.Date(2026, 11, 26, 18, 9, 11, 0, time.UTC)
	good, err := confirmation.Request(confirmation.Claim{Node: "n", Incident: at, Reason: "r"})
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	forge := func(tmpl *x509.CertificateRequest) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	u, _ := url.Parse("fencekit:confirmation?node=n&incident=2026-11-26T18:09:11.000000Z&reason-sha256=x")
	twice, _ := url.Parse("fencekit:confirmation?node=n&node=m&incident=2026-11-26T18:09:11.000000Z&reason-sha256=x")
	other, _ := url.Parse("https://example.com/confirmation?node=n&incident=2026-11-26T18:09:11.000000Z&reason-sha256=x")

	block, _ := pem.Decode(good.Spec.Request)
	tampered := append([]byte(nil), block.Bytes...)
	tampered[len(tampered)-1] ^= 1

	for name, req := range map[string][]byte{
		"garbage":       []byte("not a request"),
		"tampered":      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}),
		"two PEM":       append(append([]byte(nil), good.Spec.Request...), good.Spec.Request...),
		"another URI":   forge(&x509.CertificateRequest{URIs: []*url.URL{other}}),
		"a name twice":  forge(&x509.CertificateRequest{URIs: []*url.URL{twice}}),
		"a DNS name":    forge(&x509.CertificateRequest{URIs: []*url.URL{u}, DNSNames: []string{"x"}}),
		"two URIs":      forge(&x509.CertificateRequest{URIs: []*url.URL{u, u}}),
		"no URI at all": forge(&x509.CertificateRequest{}),
	} {
		csr := good.DeepCopy()
		csr.Spec.Request = req
		_, _, _, err := confirmation.Read(csr)
		assert.ErrorIs(t, err, confirmation.ErrNotAClaim, name)
	}
	csr := good.DeepCopy()
	csr.Spec.SignerName = "kubernetes.io/kube-apiserver-client"
	_, _, _, err = confirmation.Read(csr)
	assert.ErrorContains(t, err, `its signer is "kubernetes.io/kube-apiserver-client"`)
}

// Read never panics on a request from outside, and takes none that does
// not name one claim under a signature of its own key.
func FuzzRead(f *testing.F) {
	good, err := confirmation.Request(confirmation.Claim{Node: "n", Incident: time.Unix(1, 0), Reason: "r"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.Spec.Request)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n"))
	f.Fuzz(func(t *testing.T, req []byte) {
		csr := good.DeepCopy()
		csr.Spec.Request = req
		node, _, _, err := confirmation.Read(csr)
		if err != nil {
			return
		}
		block, _ := pem.Decode(req)
		parsed, perr := x509.ParseCertificateRequest(block.Bytes)
		if perr != nil || parsed.CheckSignature() != nil || len(parsed.URIs) != 1 || node == "" && parsed.URIs[0].Query().Get("node") != "" {
			t.Fatalf("read a request that is not one signed claim: %q", req)
		}
	})
}
