package reinstall_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/reinstall"
)

// apiToken is the operators' bearer token of the tests.
const apiToken = "reinstall-test-token-0123456789"

// handler is the service's handler, taking apiToken.
func handler(t testing.TB, e *env) http.Handler {
	tok, err := apiauth.NewTokens(apiToken)
	require.NoError(t, err)
	return reinstall.NewHandler(e.svc, &reinstall.HandlerOptions{Auth: tok})
}

// serve starts the handler on a loopback TLS test server, and returns a
// client that sends apiToken.
func serve(t *testing.T, e *env) *reinstall.Client {
	srv := httptest.NewTLSServer(handler(t, e))
	t.Cleanup(srv.Close)
	hc := *srv.Client()
	hc.Transport = &apiauth.Transport{Signer: apiauth.Bearer(apiToken), Base: hc.Transport}
	return &reinstall.Client{BaseURL: srv.URL, HTTPClient: &hc}
}

// TestHTTPRefusals: every refusal reaches the client as a typed error with
// its status and code.
func TestHTTPRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		id, image string
		setup     func(e *env)
		err       error
		status    int
		code      string
		field     string
	}{
		"machine does not exist": {id: "m9", image: "ubuntu-24.04", err: reinstall.ErrMachineNotFound, status: 404, code: "machine_not_found", field: "id"},
		"not allocated":          {id: "free", image: "ubuntu-24.04", err: reinstall.ErrNotAllocated, status: 409, code: "not_allocated", field: "allocation"},
		"locked":                 {id: "locked", image: "ubuntu-24.04", err: reinstall.ErrLocked, status: 423, code: "locked", field: "lock"},
		"image unknown":          {id: "m1", image: "windows-11", err: reinstall.ErrUnknownImage, status: 422, code: "unknown_image", field: "image"},
		"image revoked":          {id: "m1", image: "revoked-1", err: reinstall.ErrInvalidImage, status: 422, code: "invalid_image", field: "image"},
		"image malformed":        {id: "m1", image: "Ubuntu", err: reinstall.ErrInvalidImage, status: 422, code: "invalid_image", field: "image"},
		"image empty":            {id: "m1", image: "", err: reinstall.ErrInvalidImage, status: 422, code: "invalid_image", field: "image"},
		"another image pending": {id: "m1", image: "debian-12", setup: func(e *env) {
			_, err := e.svc.Reinstall(context.Background(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
			require.NoError(t, err)
		}, err: reinstall.ErrReinstallPending, status: 409, code: "reinstall_pending", field: "image"},
		"no primary disk": {id: "m1", image: "ubuntu-24.04", setup: func(e *env) {
			m := e.machine(t, "m1")
			m.Inventory.Disks[0].Partitions[1].EtcMetal = false
			e.store.Put(m)
		}, err: reinstall.ErrNoPrimaryDisk, status: 422, code: "no_primary_disk", field: "primaryDisk"},
		"ambiguous primary disk": {id: "m1", image: "ubuntu-24.04", setup: func(e *env) {
			m := e.machine(t, "m1")
			m.Inventory.Disks[1].EtcMetal = true
			e.store.Put(m)
		}, err: reinstall.ErrAmbiguousPrimaryDisk, status: 422, code: "ambiguous_primary_disk", field: "primaryDisk"},
		"reboot failed": {id: "m1", image: "ubuntu-24.04", setup: func(e *env) { e.power.FailNext(1, nil) },
			err: reinstall.ErrPlanFailed, status: 502, code: "plan_failed", field: "power"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			if tc.setup != nil {
				tc.setup(e)
			}
			c := serve(t, e)
			_, err := c.Reinstall(context.Background(), tc.id, tc.image)
			require.ErrorIs(t, err, tc.err)
			var ae *reinstall.APIError
			require.True(t, errors.As(err, &ae), "%T: %v", err, err)
			assert.Equal(t, tc.status, ae.StatusCode)
			assert.Equal(t, tc.code, ae.Code)
			assert.Equal(t, tc.id, ae.Machine)
			assert.Equal(t, tc.field, ae.Field)
			assert.NotEmpty(t, ae.Message)
			for _, other := range []error{reinstall.ErrLocked, reinstall.ErrMachineNotFound, reinstall.ErrUnknownImage} {
				if other != tc.err {
					assert.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

func TestHTTPReinstall(t *testing.T) {
	e := newEnv(t, nil)
	c := serve(t, e)
	res, err := c.Reinstall(context.Background(), "m1", "ubuntu-24.04")
	require.NoError(t, err)
	assert.Equal(t, "m1", res.Machine)
	assert.False(t, res.AlreadyPending)
	assert.Equal(t, reinstall.PhasePending, res.Status.Phase)
	assert.Equal(t, "sda", res.Status.PrimaryDisk.Name)
	assert.Equal(t, reinstall.DiskSSD, res.Status.PrimaryDisk.Type)
	assert.Equal(t, *e.machine(t, "m1").Reinstall, res.Status)

	again, err := c.Reinstall(context.Background(), "m1", "ubuntu-24.04")
	require.NoError(t, err)
	assert.True(t, again.AlreadyPending)
	assert.Equal(t, res.Status, again.Status)
	assert.Equal(t, 1, e.power.Reboots("m1"))
}

// post sends a raw request to the handler.
func post(t *testing.T, h http.Handler, method, path, contentType, body string) (int, reinstall.ErrorBody, http.Header) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var eb reinstall.ErrorBody
	require.NoError(t, json.Unmarshal(raw, &eb), "%s", raw)
	return resp.StatusCode, eb, resp.Header
}

func TestHTTPBodies(t *testing.T) {
	const path = "/v1/machine/m1/reinstall"
	for name, tc := range map[string]struct {
		method, path, ct, body string
		status                 int
		code, field            string
	}{
		"other attribute":       {body: `{"image":"ubuntu-24.04","hostname":"evil"}`, status: 422, code: "other_attributes", field: "body.hostname"},
		"other attributes":      {body: `{"size":"s2","image":"ubuntu-24.04","hostname":"x"}`, status: 422, code: "other_attributes", field: "body.hostname"},
		"only another attr":     {body: `{"project":"p2"}`, status: 422, code: "other_attributes", field: "body.project"},
		"no image":              {body: `{}`, status: 422, code: "invalid_image", field: "image"},
		"image null":            {body: `{"image":null}`, status: 400, code: "bad_request", field: "image"},
		"image not a string":    {body: `{"image":7}`, status: 400, code: "bad_request", field: "image"},
		"image twice":           {body: `{"image":"ubuntu-24.04","image":"debian-12"}`, status: 400, code: "bad_request", field: "body"},
		"not JSON":              {body: `image=ubuntu`, status: 400, code: "bad_request", field: "body"},
		"empty":                 {body: ``, status: 400, code: "bad_request", field: "body"},
		"array":                 {body: `["ubuntu-24.04"]`, status: 400, code: "bad_request", field: "body"},
		"trailing":              {body: `{"image":"ubuntu-24.04"}{}`, status: 400, code: "bad_request", field: "body"},
		"nested":                {body: `{"image":"ubuntu-24.04","allocation":{"reinstall":false}}`, status: 400, code: "bad_request", field: "body"},
		"too big":               {body: `{"image":"` + strings.Repeat("a", reinstall.MaxRequestBytes) + `"}`, status: 400, code: "bad_request", field: "body"},
		"form content":          {ct: "application/x-www-form-urlencoded", body: `{"image":"ubuntu-24.04"}`, status: 415, code: "unsupported_media_type"},
		"GET":                   {method: http.MethodGet, status: 405, code: "method_not_allowed"},
		"PUT":                   {method: http.MethodPut, body: `{"image":"ubuntu-24.04"}`, status: 405, code: "method_not_allowed"},
		"other path":            {path: "/v1/machine/m1", status: 404, code: "not_found"},
		"old path":              {path: "/machine/reinstall", status: 404, code: "not_found"},
		"unknown machine":       {path: "/v1/machine/m9/reinstall", body: `{"image":"ubuntu-24.04"}`, status: 404, code: "machine_not_found", field: "id"},
		"escaped machine ID":    {path: "/v1/machine/m%201/reinstall", body: `{"image":"ubuntu-24.04"}`, status: 404, code: "machine_not_found", field: "id"},
		"json with charset":     {ct: "application/json; charset=utf-8", body: `{"image":"windows-11"}`, status: 422, code: "unknown_image", field: "image"},
		"image with bad UTF-8":  {body: "{\"image\":\"ub\xffuntu\"}", status: 400, code: "bad_request", field: "body"},
		"escaped bad surrogate": {body: `{"image":"\ud800"}`, status: 422, code: "invalid_image", field: "image"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			h := handler(t, e)
			method, p, ct := tc.method, tc.path, tc.ct
			if method == "" {
				method = http.MethodPost
			}
			if p == "" {
				p = path
			}
			if ct == "" && method == http.MethodPost {
				ct = "application/json"
			}
			status, eb, hdr := post(t, h, method, p, ct, tc.body)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.code, eb.Code)
			assert.Equal(t, tc.field, eb.Field)
			assert.NotEmpty(t, eb.Message)
			if status == 405 {
				assert.Equal(t, "POST", hdr.Get("Allow"))
			}
			assert.False(t, e.machine(t, "m1").Allocation.Reinstall, "no refused request starts a reinstall")
		})
	}
}

func TestHTTPAcceptsNoContentType(t *testing.T) {
	e := newEnv(t, nil)
	req := httptest.NewRequest(http.MethodPost, "/v1/machine/m1/reinstall", strings.NewReader(`{"image":"ubuntu-24.04"}`))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	rec := httptest.NewRecorder()
	handler(t, e).ServeHTTP(rec, req)
	assert.Equal(t, http.StatusAccepted, rec.Code)
	var res reinstall.Result
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &res))
	assert.Equal(t, "m1", res.Machine)
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	_, err := (&reinstall.Client{BaseURL: "http://127.0.0.1:1"}).Reinstall(ctx, "", "ubuntu-24.04")
	assert.ErrorIs(t, err, reinstall.ErrMachineNotFound)
	_, err = (&reinstall.Client{BaseURL: "http://127.0.0.1:1"}).Reinstall(ctx, "a/b", "ubuntu-24.04")
	assert.ErrorIs(t, err, reinstall.ErrMachineNotFound)
	_, err = (&reinstall.Client{BaseURL: "ftp://x"}).Reinstall(ctx, "m1", "ubuntu-24.04")
	assert.Error(t, err)

	// An answer that is not an ErrorBody.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway from a proxy", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err = (&reinstall.Client{BaseURL: srv.URL, HTTPClient: srv.Client()}).Reinstall(ctx, "m1", "ubuntu-24.04")
	var ae *reinstall.APIError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, 502, ae.StatusCode)
	assert.Empty(t, ae.Code)
	assert.Contains(t, ae.Error(), "bad gateway from a proxy")
	assert.NotErrorIs(t, err, reinstall.ErrPlanFailed)

	// The path the client uses, under a base path.
	var got string
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.EscapedPath()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"machine":"m:1","status":{"phase":"pending"}}`))
	}))
	defer srv2.Close()
	res, err := (&reinstall.Client{BaseURL: srv2.URL + "/api", HTTPClient: srv2.Client()}).Reinstall(ctx, "m:1", "ubuntu-24.04")
	require.NoError(t, err)
	assert.Equal(t, "/api/v1/machine/m:1/reinstall", got)
	assert.Equal(t, reinstall.PhasePending, res.Status.Phase)
}

// Without InstallerAuth the installer's endpoints refuse every caller, the
// operators too: their credential is never taken for the installer's.
func TestInstallerEndpointsNeedTheirOwnAuth(t *testing.T) {
	e := newEnv(t, nil)
	srv := httptest.NewTLSServer(handler(t, e))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/machine/m1/order", ""},
		{http.MethodPost, "/v1/machine/m1/report", `{"generation":1,"attempt":1}`},
	} {
		req, err := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+apiToken)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s", c.method, c.path)
		assert.Contains(t, string(b), "no authentication configured")
	}
}

// The installer's lookup starts an attempt and marks the disk not intact:
// only a POST does it. A GET or a HEAD (monitoring, a proxy, a retried
// idempotent request), authenticated as the installer, gets 405 with
// Allow: POST and changes nothing; the client's POST then takes the order.
func TestOrderLookupIsAPost(t *testing.T) {
	const installerToken = "installer-test-token-0123456789"
	e := newEnv(t, nil)
	ops, err := apiauth.NewTokens(apiToken)
	require.NoError(t, err)
	inst, err := apiauth.NewTokens(installerToken)
	require.NoError(t, err)
	srv := httptest.NewTLSServer(reinstall.NewHandler(e.svc, &reinstall.HandlerOptions{Auth: ops, InstallerAuth: inst}))
	t.Cleanup(srv.Close)
	_, err = e.svc.Reinstall(t.Context(), reinstall.Request{MachineID: "m1", Image: "ubuntu-24.04"})
	require.NoError(t, err)
	before := e.machine(t, "m1")
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+"/v1/machine/m1/order", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+installerToken)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"), method)
	}
	assert.Equal(t, before, e.machine(t, "m1"), "nothing changed")

	hc := *srv.Client()
	hc.Transport = &apiauth.Transport{Signer: apiauth.Bearer(installerToken), Base: hc.Transport}
	o, err := (&reinstall.Client{BaseURL: srv.URL, HTTPClient: &hc}).Lookup(t.Context(), "m1")
	require.NoError(t, err)
	assert.Equal(t, "ubuntu-24.04", o.Image)
	assert.NotEqual(t, before, e.machine(t, "m1"), "the POST started the attempt")
}
