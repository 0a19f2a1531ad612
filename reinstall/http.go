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
)

// Path is the route of the reinstall endpoint, as a net/http pattern.
const Path = "/v1/machine/{id}/reinstall"

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

// HandlerOptions tune NewHandler. The zero value works.
type HandlerOptions struct {
	// Logger receives a record for each refused or failed request; nil
	// discards them.
	Logger *slog.Logger
}

// NewHandler returns the HTTP side of the service, the reinstall endpoint:
//
//	POST /v1/machine/{id}/reinstall   {"image": "ubuntu-24.04"}
//
// It answers 202 Accepted with a Result as JSON, also when the request
// repeats a pending one (Result.AlreadyPending). Errors are JSON
// ErrorBodies with the status of Code: 400 for a malformed body, 404 for an
// unknown machine, 409 when the machine is not allocated, a reinstall is
// pending or the record changed concurrently, 415 for a body that is not
// JSON, 422 for an unknown or invalid image, a body with any member but
// "image" (a reinstall changes nothing else) and a refused primary disk,
// 423 for a locked machine, 502 when the reboot (or the boot order or
// switch ports) failed, 405 for another method and 404 for another path.
// The body is read strictly: valid UTF-8, one JSON object, "image" once
// and a string, at most MaxRequestBytes.
func NewHandler(s *Service, o *HandlerOptions) http.Handler {
	var oo HandlerOptions
	if o != nil {
		oo = *o
	}
	log := oo.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Path, func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		res, err := func() (Result, error) {
			if ct := r.Header.Get("Content-Type"); ct != "" {
				if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
					return Result{}, errUnsupportedMedia
				}
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
			if err != nil {
				return Result{}, errorf(id, "body", fmt.Errorf("%w: reading the body: %w", ErrBadRequest, err))
			}
			image, err := DecodeRequestBody(body)
			if err != nil {
				return Result{}, withMachine(err, id)
			}
			return s.Reinstall(r.Context(), Request{MachineID: id, Image: image})
		}()
		if err != nil {
			log.LogAttrs(r.Context(), slog.LevelInfo, "reinstall request failed", slog.String("machine", id), slog.String("error", err.Error()))
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, res)
	})
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{Code: "method_not_allowed", Message: r.Method + " is not allowed; use POST"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, ErrorBody{Code: "not_found", Message: "no such endpoint"})
	})
	return mux
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
	if err := scanJSON(body, 1, func(string) error { return nil }); err != nil {
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
