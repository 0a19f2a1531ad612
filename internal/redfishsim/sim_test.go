package redfishsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/redfishsim"
)

// call makes one request with Basic credentials (user "" for none) and
// returns the status, headers and decoded body (nil if not JSON).
func call(t *testing.T, s *redfishsim.Server, method, path, user, pass, body string, hdr ...string) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL()+path, rd)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var doc map[string]any
	if json.Unmarshal(raw, &doc) != nil {
		doc = nil
	}
	return resp.StatusCode, resp.Header, doc
}

func reset(t *testing.T, s *redfishsim.Server, id, typ string) int {
	t.Helper()
	code, _, _ := call(t, s, "POST", s.SystemURI(id)+"/Actions/ComputerSystem.Reset", "admin", "password", `{"ResetType":"`+typ+`"}`)
	return code
}

func TestServiceRootAndAuth(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{})
	defer s.Close()
	assert.True(t, strings.HasPrefix(s.URL(), "https://127.0.0.1:"))
	assert.Equal(t, "redfish+https://"+s.HostPort(), s.Address())

	code, _, doc := call(t, s, "GET", "/redfish/v1/", "", "", "")
	require.Equal(t, 200, code)
	assert.Equal(t, map[string]any{"@odata.id": "/redfish/v1/Systems"}, doc["Systems"])

	code, hdr, doc := call(t, s, "GET", "/redfish/v1/Systems", "", "", "")
	assert.Equal(t, 401, code)
	assert.Contains(t, hdr.Get("WWW-Authenticate"), "Basic")
	assert.Contains(t, doc, "error", "401 has a Redfish error body")

	code, _, _ = call(t, s, "GET", "/redfish/v1/Systems", "admin", "wrong", "")
	assert.Equal(t, 401, code)
	code, _, doc = call(t, s, "GET", "/redfish/v1/Systems", "admin", "password", "")
	require.Equal(t, 200, code)
	assert.EqualValues(t, 1, doc["Members@odata.count"])

	code, _, doc = call(t, s, "GET", "/redfish/v1/Systems/1", "admin", "password", "")
	require.Equal(t, 200, code)
	assert.Equal(t, "On", doc["PowerState"])
	act := doc["Actions"].(map[string]any)["#ComputerSystem.Reset"].(map[string]any)
	assert.Equal(t, "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", act["target"])
	assert.Len(t, act["ResetType@Redfish.AllowableValues"], len(redfishsim.DefaultResetTypes))

	code, _, _ = call(t, s, "GET", "/redfish/v1/Systems/9", "admin", "password", "")
	assert.Equal(t, 404, code)
	code, _, _ = call(t, s, "DELETE", "/redfish/v1/Systems/1", "admin", "password", "")
	assert.Equal(t, 405, code)

	assert.Equal(t, 1, s.Connections(), "the client reuses its connection")
	assert.Equal(t, 1, s.Requests("GET", "/redfish/v1/Systems/1"))
	assert.Equal(t, 2, s.Requests("", "/redfish/v1/Systems/1/"), "any method, trailing slash ignored")
	assert.Equal(t, 1, s.Requests("GET", "/redfish/v1/Systems/9"), "a 404 is counted")
	assert.Equal(t, 3, s.Requests("GET", "/redfish/v1/Systems"), "401s are counted")
	assert.Equal(t, 7, s.TotalRequests())
	assert.NotEmpty(t, s.CertPEM())
	assert.NotNil(t, s.Certificate())
}

func TestSessions(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{SessionOnly: true, Username: "root", Password: "calvin"})
	defer s.Close()
	code, _, _ := call(t, s, "GET", "/redfish/v1/Systems", "root", "calvin", "")
	assert.Equal(t, 401, code, "Basic refused by a session-only service")

	code, _, _ = call(t, s, "POST", "/redfish/v1/SessionService/Sessions", "", "", `{"UserName":"root","Password":"nope"}`)
	assert.Equal(t, 401, code)
	code, hdr, doc := call(t, s, "POST", "/redfish/v1/SessionService/Sessions", "", "", `{"UserName":"root","Password":"calvin"}`)
	require.Equal(t, 201, code)
	tok, loc := hdr.Get("X-Auth-Token"), hdr.Get("Location")
	require.NotEmpty(t, tok)
	assert.Equal(t, loc, doc["@odata.id"])
	assert.Equal(t, 1, s.Sessions())

	code, _, _ = call(t, s, "GET", "/redfish/v1/Systems/1", "", "", "", "X-Auth-Token", tok)
	assert.Equal(t, 200, code)
	code, _, _ = call(t, s, "DELETE", loc, "", "", "", "X-Auth-Token", tok)
	assert.Equal(t, 204, code)
	assert.Equal(t, 0, s.Sessions())
	code, _, _ = call(t, s, "GET", "/redfish/v1/Systems/1", "", "", "", "X-Auth-Token", tok)
	assert.Equal(t, 401, code, "a deleted session's token")
}

func TestReset(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{Systems: []redfishsim.System{{}, {ID: "b", ResetTypes: []string{"On", "ForceOff"}}}})
	defer s.Close()
	for _, tc := range []struct {
		typ   string
		code  int
		after string
	}{
		{"ForceOff", 204, "Off"}, {"ForceOff", 204, "Off"}, {"On", 204, "On"}, {"GracefulShutdown", 204, "Off"},
		{"PowerCycle", 204, "On"}, {"PushPowerButton", 204, "Off"}, {"PushPowerButton", 204, "On"},
		{"Nmi", 204, "On"}, {"Bogus", 400, "On"},
	} {
		assert.Equal(t, tc.code, reset(t, s, "1", tc.typ), tc.typ)
		assert.Equal(t, tc.after, s.PowerState("1"), tc.typ)
	}
	assert.Equal(t, 400, reset(t, s, "b", "PowerCycle"), "a type the system does not offer")
	assert.Equal(t, 204, reset(t, s, "b", "ForceOff"))
	assert.Equal(t, fence.StateOff, s.Truth("b"))
	assert.Equal(t, 404, reset(t, s, "c", "On"))
	code, _, _ := call(t, s, "POST", s.SystemURI("1")+"/Actions/ComputerSystem.Reset", "admin", "password", `{}`)
	assert.Equal(t, 400, code, "no ResetType")
	code, _, _ = call(t, s, "POST", s.SystemURI("1")+"/Actions/ComputerSystem.Reset", "admin", "password", `{`)
	assert.Equal(t, 400, code, "bad JSON")
	assert.Len(t, s.Resets(), 9, "accepted resets")

	s.SetTruth("1", fence.StateOff)
	assert.Equal(t, "Off", s.PowerState("1"))
	s.SetPowerState("1", "Paused")
	assert.Equal(t, fence.StateUnknown, s.Truth("1"))
}

func TestPowerDelay(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{PowerDelay: 100 * time.Millisecond, RefuseNoop: true})
	defer s.Close()
	require.Equal(t, 204, reset(t, s, "1", "ForceOff"))
	assert.Equal(t, "PoweringOff", s.PowerState("1"))
	assert.Equal(t, fence.StateUnknown, s.Truth("1"))
	assert.Equal(t, 409, reset(t, s, "1", "ForceOff"), "already going off")
	assert.Eventually(t, func() bool { return s.PowerState("1") == "Off" }, 2*time.Second, 5*time.Millisecond)
	assert.Equal(t, fence.StateOff, s.Truth("1"))
	require.Equal(t, 204, reset(t, s, "1", "On"))
	assert.Equal(t, "PoweringOn", s.PowerState("1"))

	q := redfishsim.New(redfishsim.Options{PowerDelay: 100 * time.Millisecond, QuietDelay: true})
	defer q.Close()
	require.Equal(t, 204, reset(t, q, "1", "ForceOff"))
	assert.Equal(t, "On", q.PowerState("1"), "quiet: the previous state meanwhile")
	assert.Equal(t, fence.StateUnknown, q.Truth("1"))
	assert.Eventually(t, func() bool { return q.PowerState("1") == "Off" }, 2*time.Second, 5*time.Millisecond)
}

func TestFaults(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{ResetStatus: 200})
	defer s.Close()
	sys := s.SystemURI("1")

	remove := s.Inject(redfishsim.Fault{Kind: redfishsim.FaultStatus, Code: 503, Path: sys, Times: 1})
	code, _, doc := call(t, s, "GET", sys, "admin", "password", "")
	assert.Equal(t, 503, code)
	assert.Contains(t, doc, "error")
	code, _, _ = call(t, s, "GET", sys, "admin", "password", "")
	assert.Equal(t, 200, code, "Times: 1")
	remove()

	remove = s.Inject(redfishsim.Fault{Kind: redfishsim.FaultBadJSON, Method: "GET"})
	code, _, doc = call(t, s, "GET", sys, "admin", "password", "")
	assert.Equal(t, 200, code)
	assert.Nil(t, doc, "not JSON")
	remove()

	remove = s.Inject(redfishsim.Fault{Kind: redfishsim.FaultNoPowerState})
	_, _, doc = call(t, s, "GET", sys, "admin", "password", "")
	assert.NotContains(t, doc, "PowerState")
	remove()

	remove = s.Inject(redfishsim.Fault{Kind: redfishsim.FaultPowerState, Value: "Paused"})
	_, _, doc = call(t, s, "GET", sys, "admin", "password", "")
	assert.Equal(t, "Paused", doc["PowerState"])
	remove()

	remove = s.Inject(redfishsim.Fault{Kind: redfishsim.FaultDropReset, Value: "ForceOff"})
	assert.Equal(t, 200, reset(t, s, "1", "ForceOff"))
	assert.Equal(t, "On", s.PowerState("1"), "dropped")
	assert.Equal(t, 200, reset(t, s, "1", "GracefulShutdown"))
	assert.Equal(t, "Off", s.PowerState("1"), "only ForceOff is dropped")
	remove()

	remove = s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang, Delay: 50 * time.Millisecond})
	begin := time.Now()
	code, _, _ = call(t, s, "GET", "/redfish/v1", "", "", "")
	assert.Equal(t, 200, code)
	assert.GreaterOrEqual(t, time.Since(begin), 50*time.Millisecond)
	remove()

	s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang, Path: "/redfish"})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/redfish", nil)
	_, err := s.Client().Do(req)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	s.SetTruth("1", fence.StateOn)
	s.Inject(redfishsim.Fault{Kind: redfishsim.FaultCloseConn, Method: "POST", Times: 1})
	req, _ = http.NewRequestWithContext(t.Context(), "POST", s.URL()+sys+"/Actions/ComputerSystem.Reset", bytes.NewBufferString(`{"ResetType":"ForceOff"}`))
	req.SetBasicAuth("admin", "password")
	_, err = s.Client().Do(req)
	assert.Error(t, err, "no reply")
	assert.Equal(t, "Off", s.PowerState("1"), "carried out all the same")
}

func TestCloseReleasesHungReplies(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{})
	s.Inject(redfishsim.Fault{Kind: redfishsim.FaultHang})
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := s.Client().Get(s.URL() + "/redfish/v1")
		if err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return s.TotalRequests() == 1 }, 2*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a hung reply")
	}
	<-done
	s.Close() // twice is fine
}

func TestPlainHTTP(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{PlainHTTP: true})
	defer s.Close()
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"))
	assert.Nil(t, s.Certificate())
	code, _, _ := call(t, s, "GET", "/redfish/v1", "", "", "")
	assert.Equal(t, 200, code)
}

// The boot source override: PATCHed, read back, used by the next boot
// only; a property or value the system does not offer is a 400 that
// changes nothing.
func TestBootOverride(t *testing.T) {
	s := redfishsim.New(redfishsim.Options{})
	t.Cleanup(s.Close)
	code, _, _ := call(t, s, "PATCH", "/redfish/v1/Systems/1", "admin", "password",
		`{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}`)
	require.Equal(t, 204, code)
	_, _, doc := call(t, s, "GET", "/redfish/v1/Systems/1", "admin", "password", "")
	boot := doc["Boot"].(map[string]any)
	assert.Equal(t, "Pxe", boot["BootSourceOverrideTarget"])
	assert.Equal(t, "Once", boot["BootSourceOverrideEnabled"])
	for _, bad := range []string{`{"Boot":{"BootSourceOverrideTarget":"Usb"}}`, `{"Boot":{"BootSourceOverrideEnabled":"Always"}}`,
		`{"AssetTag":"x"}`, `{"Boot":{"BootOrder":"x"}}`, `[`} {
		code, _, _ := call(t, s, "PATCH", "/redfish/v1/Systems/1", "admin", "password", bad)
		assert.Equal(t, 400, code, bad)
	}
	target, enabled := s.Boot("1")
	assert.Equal(t, "Pxe", target)
	assert.Equal(t, "Once", enabled)
	code, _, _ = call(t, s, "POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", "admin", "password", `{"ResetType":"ForceRestart"}`)
	require.Less(t, code, 300)
	code, _, _ = call(t, s, "POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", "admin", "password", `{"ResetType":"ForceRestart"}`)
	require.Less(t, code, 300)
	assert.Equal(t, []string{"Pxe", "Hdd"}, s.Boots("1"))
	target, enabled = s.Boot("1")
	assert.Equal(t, "None", target)
	assert.Equal(t, "Disabled", enabled)
}
