package reinstall

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"

	"github.com/fencekit/fencekit/apiauth"
	"github.com/fencekit/fencekit/internal/strictjson"
)

// The routes, as net/http patterns: the reinstall endpoint, and the
// installer's lookup and report.
const (
	Path       = "/v1/machine/{id}/reinstall"
	PathOrder  = "/v1/machine/{id}/order"
	PathReport = "/v1/machine/{id}/report"
)

// MaxRequestBytes bounds the body of a reinstall request.
const MaxRequestBytes = 64 << 10

// ErrorBody is the JSON body of every error answer of the handler.
type ErrorBody struct {
	// Code names the error: one of the codes of Code, or "not_found",
	// "method_not_allowed", "unsupported_media_type", "internal".
	Code string `json:"code"`
	// Message says what went wrong, for people.
	Message string `json:"message"`
	// Machine and Field name the machine and the attribute at fault, when
	// known.
	Machine string `json:"machine,omitempty"`
	Field   string `json:"field,omitempty"`
}

// RequestBody is the JSON body of a reinstall request.
type RequestBody struct {
	// Image is the image to install: the only thing a request may set.
	Image string `json:"image"`
}

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Auth authenticates the callers of the reinstall endpoint (operators,
	// their tools) before anything is read or done: apiauth.Tokens,
	// *apiauth.HMAC, or apiauth.AnyOf both. Required: without it every
	// request is refused with 401.
	Auth apiauth.Verifier
	// InstallerAuth authenticates the installer's lookup and report (the
	// credential the machines' installer holds, which must not order
	// reinstalls). nil refuses them all: the operators' credential is never
	// taken for the installer's, so that it need not sit in an installer
	// image.
	InstallerAuth apiauth.Verifier
	// Logger receives a record for each refused or failed request; nil
	// discards them. Credentials never reach it.
	Logger *slog.Logger
}

// NewHandler returns the HTTP side of the service:
//
//	POST /v1/machine/{id}/reinstall   {"image": "ubuntu-24.04"}        (Auth)
//	POST /v1/machine/{id}/order                                       (InstallerAuth)
//	POST /v1/machine/{id}/report      {"generation":1,"attempt":1,...} (InstallerAuth)
//
// The last two are the installer's side (metal-stack's metal-core role:
// the lookup at PXE boot and the report), so that the installer runs as its
// own program against the API side (Client implements
// installer.Allocations and installer.Reporter). A request its verifier
// refuses gets 401 with an ErrorBody of code "unauthorized", and nothing is
// read or done.
//
// The reinstall answers 202 Accepted with a Result as JSON, also when the
// request repeats a pending one (Result.AlreadyPending). Errors are JSON
// ErrorBodies with the status of Code: 400 for a malformed body, 404 for an
// unknown machine, 409 when the machine is not allocated, a reinstall is
// pending or the record changed concurrently, 415 for a body that is not
// JSON, 422 for an unknown or invalid image, a body with any member but
// "image" (a reinstall changes nothing else) and a refused primary disk,
// 423 for a locked machine, 502 when the reboot (or the boot order or
// switch ports) failed, 405 for another method and 404 for another path.
// The body is read strictly: valid UTF-8, one JSON object, "image" once
// and a string, at most MaxRequestBytes. The order answers 200 with an
// OrderBody; the report 204, 409 for a stale one, 400 for a malformed one.
func NewHandler(s *Service, o *HandlerOptions) http.Handler {
	var oo HandlerOptions
	if o != nil {
		oo = *o
	}
	log := oo.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	installerAuth := oo.InstallerAuth
	deny := func(w http.ResponseWriter, r *http.Request, err error) {
		log.LogAttrs(r.Context(), slog.LevelWarn, "reinstall API: request refused", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr), slog.String("error", err.Error()))
		writeJSON(w, http.StatusUnauthorized, ErrorBody{Code: "unauthorized", Message: err.Error()})
	}
	failed := func(r *http.Request, what, id string, err error) {
		log.LogAttrs(r.Context(), slog.LevelInfo, what+" failed", slog.String("machine", id), slog.String("error", err.Error()))
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+Path, apiauth.Require(oo.Auth, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		res, err := func() (Result, error) {
			body, err := readJSONBody(w, r)
			if err != nil {
				return Result{}, withMachine(err, id)
			}
			image, err := DecodeRequestBody(body)
			if err != nil {
				return Result{}, withMachine(err, id)
			}
			return s.Reinstall(r.Context(), Request{MachineID: id, Image: image})
		}()
		if err != nil {
			failed(r, "reinstall request", id, err)
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, res)
	}), deny))
	// The lookup starts an attempt and marks the primary disk not intact:
	// it changes state, so it is a POST. A GET or HEAD (monitoring, a
	// proxy, a retried idempotent request) gets 405 and changes nothing.
	mux.Handle("POST "+PathOrder, apiauth.Require(installerAuth, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		o, err := s.Lookup(r.Context(), id)
		if err != nil {
			failed(r, "lookup", id, err)
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, OrderBodyOf(o))
	}), deny))
	mux.Handle("POST "+PathReport, apiauth.Require(installerAuth, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		err := func() error {
			body, err := readJSONBody(w, r)
			if err != nil {
				return err
			}
			rep, err := DecodeReportBody(id, body)
			if err != nil {
				return err
			}
			return s.Report(r.Context(), rep)
		}()
		if err != nil {
			failed(r, "report", id, err)
			writeError(w, withMachine(err, id))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}), deny))
	for path, method := range map[string]string{Path: http.MethodPost, PathOrder: http.MethodPost, PathReport: http.MethodPost} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", method)
			writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{Code: "method_not_allowed", Message: r.Method + " is not allowed; use " + method})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, ErrorBody{Code: "not_found", Message: "no such endpoint"})
	})
	return mux
}

// readJSONBody checks the media type and reads at most MaxRequestBytes.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, errUnsupportedMedia
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		return nil, errorf("", "body", fmt.Errorf("%w: reading the body: %w", ErrBadRequest, err))
	}
	return body, nil
}

var errUnsupportedMedia = errors.New("the body must be application/json")

// DecodeRequestBody reads a reinstall request's JSON body strictly and
// returns the image. A member other than "image" is ErrOtherAttributes
// (field "body.<name>"); a missing or empty image ErrInvalidImage; anything
// malformed ErrBadRequest.
func DecodeRequestBody(body []byte) (string, error) {
	if len(body) > MaxRequestBytes {
		return "", errorf("", "body", fmt.Errorf("%w: more than %d bytes", ErrBadRequest, MaxRequestBytes))
	}
	if err := strictjson.Scan(body, 1, func(string) error { return nil }); err != nil {
		return "", errorf("", "body", fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return "", errorf("", "body", fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	var others []string
	for k := range members {
		if k != "image" {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return "", errorf("", "body."+others[0], fmt.Errorf("%w: the request may not set %q", ErrOtherAttributes, others))
	}
	raw, ok := members["image"]
	if !ok {
		return "", errorf("", "image", fmt.Errorf("%w: no image given", ErrInvalidImage))
	}
	var image string
	if len(raw) == 0 || raw[0] != '"' {
		return "", errorf("", "image", fmt.Errorf("%w: image is not a string", ErrBadRequest))
	}
	if err := json.Unmarshal(raw, &image); err != nil {
		return "", errorf("", "image", fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	if image == "" {
		return "", errorf("", "image", fmt.Errorf("%w: empty image", ErrInvalidImage))
	}
	return image, nil
}

func writeError(w http.ResponseWriter, err error) {
	b := ErrorBody{Message: err.Error()}
	var status int
	if errors.Is(err, errUnsupportedMedia) {
		b.Code, status = "unsupported_media_type", http.StatusUnsupportedMediaType
	} else {
		b.Code, status = Code(err)
	}
	var e *Error
	if errors.As(err, &e) {
		b.Machine, b.Field = e.Machine, e.Field
		if top, ok := err.(*Error); ok && top.Err != nil {
			b.Message = top.Err.Error() // the body names machine and field apart
		}
	}
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"code":"internal","message":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
