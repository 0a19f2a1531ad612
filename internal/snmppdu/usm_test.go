package snmppdu

import (
	"testing"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The keys made here are gosnmp's, for every protocol pair.
func TestLocalKeys(t *testing.T) {
	engineID := "\x80\x00\x1f\x88\x80fencekitsim1"
	auths := []gosnmp.SnmpV3AuthProtocol{gosnmp.MD5, gosnmp.SHA, gosnmp.SHA224, gosnmp.SHA256, gosnmp.SHA384, gosnmp.SHA512}
	privs := []gosnmp.SnmpV3PrivProtocol{gosnmp.NoPriv, gosnmp.DES, gosnmp.AES, gosnmp.AES192, gosnmp.AES256, gosnmp.AES192C, gosnmp.AES256C}
	for _, a := range auths {
		for _, p := range privs {
			for _, pw := range []string{"fenceauth123", "x", "a-passphrase-of-some-length-that-is-longer-than-sixty-four-bytes-in-all"} {
				sp := &gosnmp.UsmSecurityParameters{AuthenticationProtocol: a, AuthenticationPassphrase: pw,
					PrivacyProtocol: p, PrivacyPassphrase: pw + "-priv", AuthoritativeEngineID: engineID}
				require.NoError(t, sp.InitSecurityKeys())
				secret, privacy := localKeys(a, p, pw, pw+"-priv", engineID)
				assert.Equal(t, sp.SecretKey, secret, "%v %v %q", a, p, pw)
				if p == gosnmp.NoPriv {
					assert.Nil(t, privacy)
					continue
				}
				assert.Equal(t, sp.PrivacyKey, privacy, "%v %v %q", a, p, pw)
			}
		}
	}
}
