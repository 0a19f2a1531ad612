package redfish

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/fencekit/fencekit/fence"
)

// maxBody bounds the size of a reply the driver reads.
const maxBody = 4 << 20

// closeTimeout bounds Close's session logout.
const closeTimeout = 2 * time.Second

// newClient returns the device's HTTP client: one transport with
// keep-alive, no proxy (a fence device is reached directly, whatever the
// environment says), TLS verified unless insecure, and redirects followed
// only for GETs on the same host.
func newClient(tlsConf *tls.Config) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          8,
		MaxIdleConnsPerHost:   4,
		MaxConnsPerHost:       4, // BMCs serve few connections at once
		IdleConnTimeout:       30 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 0, // the request's context bounds it
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			first := via[0]
			if len(via) > 3 || req.Method != http.MethodGet || req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

// tlsConfig returns the TLS configuration of o.
func tlsConfig(o *Options) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            o.RootCAs,
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // only when asked (ssl_insecure)
	}
}

// reply is a reply the driver received.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errorText returns "HTTP 401 Unauthorized: MessageId: message" for a
// reply, taking the Redfish error body apart with gofish's schema.
func (d *Device) errorText(r *reply) string {
	s := "HTTP " + strconv.Itoa(r.status)
	if t := http.StatusText(r.status); t != "" {
		s += " " + t
	}
	if len(r.body) == 0 {
		return s
	}
	var msg string
	var rf struct{ Error *schemas.Error }
	if json.Unmarshal(r.body, &rf) == nil && rf.Error != nil {
		msg = rf.Error.Message
		id := rf.Error.Code
		if len(rf.Error.ExtendedInfos) > 0 {
			x := rf.Error.ExtendedInfos[0]
			if x.MessageID != "" {
				id = x.MessageID
			}
			if x.Message != "" {
				msg = x.Message
			}
		}
		if id != "" {
			msg = id + ": " + msg
		}
	} else if !bytes.HasPrefix(bytes.TrimSpace(r.body), []byte("<")) {
		msg = string(r.body) // a short text reply; HTML pages are left out
	}
	if msg = clip(fence.Scrub(msg, d.o.Password), 200); msg != "" {
		s += ": " + msg
	}
	return s
}

// fail returns an *Error of a request.
func (d *Device) fail(method, path, field, reason string, cause error, is ...error) *Error {
	return &Error{Host: d.host, Method: method, Path: path, Field: field, Reason: reason, Err: cause, is: is}
}

// statusError returns the *Error of a reply with an unwanted status.
func (d *Device) statusError(method, path string, r *reply) *Error {
	e := d.fail(method, path, "", d.errorText(r), nil)
	e.Status = r.status
	switch r.status {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.is = append(e.is, fence.ErrLoginDenied)
	}
	return e
}

// sentErr tells whether a request that failed may have reached the
// service: false when no connection was ever obtained for it, so that
// nothing was written.
type sentErr struct {
	err         *Error
	mayHaveSent bool
}

// roundTrip sends one request with the given auth header (name, value) and
// reads the whole reply. It fails only when there is no reply; its error
// says whether the request may have been sent.
func (d *Device) roundTrip(ctx context.Context, method, path string, body []byte, authName, authValue string) (*reply, *sentErr) {
	if err := ctx.Err(); err != nil {
		return nil, &sentErr{err: d.fail(method, path, "", "not sent", err)}
	}
	if !strings.HasPrefix(path, "/") {
		return nil, &sentErr{err: d.fail(method, path, "", "not sent: the URI is not on this service", nil, ErrMalformedReply)}
	}
	if _, ok := ctx.Deadline(); !ok && d.o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.o.Timeout)
		defer cancel()
	}
	var got atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { got.Store(true) },
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, rd)
	if err != nil {
		return nil, &sentErr{err: d.fail(method, path, "", "bad request URI", err, ErrMalformedReply)}
	}
	req.Header["Accept"] = acceptJSON
	req.Header["Odata-Version"] = odataVersion
	req.Header["User-Agent"] = userAgent
	if body != nil {
		req.Header["Content-Type"] = contentJSON
	}
	if authName != "" {
		req.Header[authName] = []string{authValue}
	}
	start := time.Now()
	d.requests.Add(1)
	resp, err := d.client.Do(req)
	if err != nil {
		se := d.transportError(ctx, method, path, start, err, got.Load())
		d.debug(ctx, method, path, 0, start, se.err)
		return nil, se
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	r := &reply{status: resp.StatusCode, header: resp.Header, body: data}
	if err != nil {
		// The status line came: the request was received. Replies with no
		// body to speak of are still good; for the others, the caller
		// needs the body, and a cut one is not a reply.
		if method == http.MethodGet {
			se := d.transportError(ctx, method, path, start, err, true)
			se.err.Status = resp.StatusCode
			d.debug(ctx, method, path, resp.StatusCode, start, se.err)
			return nil, se
		}
	}
	d.debug(ctx, method, path, resp.StatusCode, start, nil)
	return r, nil
}

var (
	acceptJSON   = []string{"application/json"}
	contentJSON  = []string{"application/json"}
	odataVersion = []string{"4.0"}
	userAgent    = []string{"fencekit-redfish"}
)

func (d *Device) debug(ctx context.Context, method, path string, status int, start time.Time, err error) {
	if !d.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("host", d.host), slog.String("method", method), slog.String("path", path),
		slog.Int("status", status), slog.Duration("duration", time.Since(start)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	d.logger.LogAttrs(ctx, slog.LevelDebug, "redfish request", attrs...)
}

// transportError describes a request that got no reply.
func (d *Device) transportError(ctx context.Context, method, path string, start time.Time, err error, gotConn bool) *sentErr {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is in the message already
	}
	var is []error
	reason := "no reply"
	if !gotConn {
		reason = "cannot connect"
		is = append(is, fence.ErrUnreachable)
	}
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var he x509.HostnameError
	var rhe tls.RecordHeaderError
	switch {
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &he):
		reason = "TLS certificate not trusted (give the CA with ssl_ca_file, or skip verification with ssl_insecure)"
	case errors.As(err, &rhe), strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		reason = "TLS handshake failed (does the service speak HTTPS?)"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		if gotConn {
			reason = "no reply"
		}
		reason += fmt.Sprintf(": timed out after %v", time.Since(start).Round(time.Millisecond))
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
	case errors.Is(err, context.Canceled):
		reason += ": canceled"
	}
	return &sentErr{err: d.fail(method, path, "", reason, err, is...), mayHaveSent: gotConn}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// send makes a request with the device's credentials. With session
// authentication it logs in first if needed, and once more if the service
// has dropped the session (401). Errors before the request left (a failed
// login) have mayHaveSent false.
func (d *Device) send(ctx context.Context, method, path string, body []byte) (*reply, *sentErr) {
	if d.o.Auth != AuthSession {
		return d.roundTrip(ctx, method, path, body, "Authorization", d.basic)
	}
	for try := 0; ; try++ {
		tok, err := d.login(ctx)
		if err != nil {
			return nil, &sentErr{err: err}
		}
		r, se := d.roundTrip(ctx, method, path, body, "X-Auth-Token", tok)
		if se == nil && r.status == http.StatusUnauthorized && try == 0 {
			d.dropToken(tok) // expired or deleted: log in again
			continue
		}
		return r, se
	}
}

// getJSON GETs path and decodes the reply into v. Any status but 2xx is an
// error.
func (d *Device) getJSON(ctx context.Context, path string, v any) error {
	r, se := d.send(ctx, http.MethodGet, path, nil)
	if se != nil {
		return se.err
	}
	if r.status < 200 || r.status > 299 {
		return d.statusError(http.MethodGet, path, r)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		field := ""
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field = te.Field
		}
		return d.fail(http.MethodGet, path, field, "reply is not the expected JSON", err, ErrMalformedReply)
	}
	return nil
}

// login returns the session token, logging in first if there is none.
func (d *Device) login(ctx context.Context) (string, *Error) {
	if tok := d.currentToken(); tok != "" {
		return tok, nil
	}
	d.authMu.Lock()
	defer d.authMu.Unlock()
	if tok := d.currentToken(); tok != "" {
		return tok, nil
	}
	if d.isClosed() {
		return "", d.fail(http.MethodPost, "(login)", "", "not sent", ErrClosed)
	}
	root, err := d.serviceRoot(ctx)
	if err != nil {
		return "", asError(err)
	}
	path := root.Links.Sessions.ID
	if path == "" {
		path = strings.TrimRight(d.o.RedfishURI, "/") + "/SessionService/Sessions"
	}
	path = d.localPath(path)
	body, _ := json.Marshal(struct{ UserName, Password string }{d.o.Username, d.o.Password.Reveal()})
	r, se := d.roundTrip(ctx, http.MethodPost, path, body, "", "")
	if se != nil {
		return "", se.err
	}
	if r.status < 200 || r.status > 299 {
		e := d.statusError(http.MethodPost, path, r)
		e.Reason = "login: " + e.Reason
		return "", e
	}
	tok := r.header.Get("X-Auth-Token")
	if tok == "" {
		return "", d.fail(http.MethodPost, path, "X-Auth-Token", "login reply has no session token", nil, ErrMalformedReply)
	}
	loc := r.header.Get("Location")
	if loc == "" {
		var doc struct {
			ID string `json:"@odata.id"`
		}
		json.Unmarshal(r.body, &doc)
		loc = doc.ID
	}
	d.mu.Lock()
	d.token, d.session = tok, d.localPath(loc)
	closed := d.closed
	d.mu.Unlock()
	if closed {
		// Closed while logging in: do not leave the session behind.
		d.logout()
		return "", d.fail(http.MethodPost, path, "", "device closed during login", ErrClosed)
	}
	return tok, nil
}

func (d *Device) currentToken() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.token
}

func (d *Device) dropToken(tok string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.token == tok {
		d.token, d.session = "", ""
	}
}

// logout deletes the session, if any, within closeTimeout.
func (d *Device) logout() error {
	d.mu.Lock()
	tok, sess := d.token, d.session
	d.token, d.session = "", ""
	d.mu.Unlock()
	if tok == "" || sess == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	r, se := d.roundTrip(ctx, http.MethodDelete, sess, nil, "X-Auth-Token", tok)
	if se != nil {
		return se.err
	}
	if (r.status < 200 || r.status > 299) && r.status != http.StatusNotFound {
		return d.statusError(http.MethodDelete, sess, r)
	}
	return nil
}

// localPath turns a URI the service gave (a path, or an absolute URL on
// the same host) into a path for d.base; a URL on another host is kept
// whole, and roundTrip refuses it.
func (d *Device) localPath(s string) string {
	if strings.HasPrefix(s, "/") {
		return s
	}
	if u, err := url.Parse(s); err == nil && u.IsAbs() && d.sameService(u) {
		return u.RequestURI()
	}
	return s
}

// sameService reports whether u is on the device's service: same scheme,
// host and port (the scheme's default when not given).
func (d *Device) sameService(u *url.URL) bool {
	p, mine := u.Port(), d.port
	if p == "" {
		p = defaultPort(u.Scheme)
	}
	if mine == "" {
		mine = defaultPort(d.scheme)
	}
	return strings.EqualFold(u.Scheme, d.scheme) && strings.EqualFold(u.Hostname(), d.hostURL) && p == mine
}

func defaultPort(scheme string) string {
	if strings.EqualFold(scheme, "http") {
		return "80"
	}
	return "443"
}

func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Reason: err.Error(), Err: err}
}
