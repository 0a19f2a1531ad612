package reinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/internal/errfmt"
)

// maxAnswerBytes bounds an answer the client reads.
const maxAnswerBytes = 1 << 20

// Client calls the reinstall endpoint of a server that runs NewHandler:
// what a CLI or an SDK uses. The zero value of HTTPClient uses
// http.DefaultClient.
type Client struct {
	// BaseURL is the server's URL, such as "https://metal.example:8080";
	// the endpoint's path is appended to it.
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// APIError is an error answer of the server. errors.Is matches it against
// the sentinel its code names (errors.Is(err, ErrLocked) for "locked").
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code, Message, Machine and Field are the ErrorBody's; Code is empty
	// when the answer was not an ErrorBody.
	Code, Message, Machine, Field string
}

// Error returns "reinstall: HTTP status code, machine M, field F: message".
func (e *APIError) Error() string {
	status := strconv.Itoa(e.StatusCode)
	if e.Code != "" {
		status += " " + e.Code
	}
	var b errfmt.Labels
	return b.Start("reinstall").AddRaw("HTTP", status).Add("machine", e.Machine).AddRaw("field", e.Field).Part(e.Message).String()
}

// Is reports whether target is the sentinel the error's code names.
func (e *APIError) Is(target error) bool {
	s := sentinelFor(e.Code)
	return s != nil && s == target
}

// Reinstall asks the server to reinstall the machine with the image. It
// returns the server's Result, or an *APIError for an error answer (match
// it with errors.Is against the sentinels), or the transport's error.
func (c *Client) Reinstall(ctx context.Context, machineID, image string) (Result, error) {
	body, err := json.Marshal(RequestBody{Image: image})
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := c.call(ctx, http.MethodPost, machineID, "reinstall", body, http.StatusAccepted, &res); err != nil {
		return Result{}, err
	}
	if res.Machine != machineID {
		return Result{}, errors.New("reinstall: the server answered for another machine")
	}
	return res, nil
}

// Lookup is the installer's lookup at PXE boot (installer.Allocations):
// the order of the API side for the machine, checked before it is returned.
func (c *Client) Lookup(ctx context.Context, machineID string) (Order, error) {
	var b OrderBody
	if err := c.call(ctx, http.MethodPost, machineID, "order", nil, http.StatusOK, &b); err != nil {
		return Order{}, err
	}
	if b.Machine != machineID {
		return Order{}, errors.New("reinstall: the server answered for another machine")
	}
	return b.Order()
}

// Report sends the installer's report of an attempt (installer.Reporter).
func (c *Client) Report(ctx context.Context, r Report) error {
	body, err := json.Marshal(ReportBodyOf(r))
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, r.Machine, "report", body, http.StatusNoContent, nil)
}

// call sends one request to /v1/machine/{id}/{what} and decodes a
// successful answer (status want) into out.
func (c *Client) call(ctx context.Context, method, machineID, what string, body []byte, want int, out any) error {
	if !ValidMachineID(machineID) {
		return errorf(machineID, "id", fmt.Errorf("%w: %q is not a machine ID", ErrMachineNotFound, machineID))
	}
	base, err := url.Parse(c.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Errorf("reinstall: client: base URL %q is not an http or https URL", c.BaseURL)
	}
	u := base.JoinPath("v1", "machine", machineID, what)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reinstall: machine %s: %w", quote(machineID), err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("reinstall: machine %s: reading the answer: %w", quote(machineID), err)
	}
	if resp.StatusCode != want {
		e := &APIError{StatusCode: resp.StatusCode}
		var eb ErrorBody
		if json.Unmarshal(answer, &eb) == nil && eb.Code != "" {
			e.Code, e.Message, e.Machine, e.Field = eb.Code, eb.Message, eb.Machine, eb.Field
		} else {
			e.Message = strings.TrimSpace(string(answer[:min(len(answer), 200)]))
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("reinstall: machine %s: decoding the answer: %w", quote(machineID), err)
	}
	return nil
}
