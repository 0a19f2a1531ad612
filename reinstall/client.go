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
	"strings"
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
	var b strings.Builder
	fmt.Fprintf(&b, "reinstall: HTTP %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Machine != "" {
		b.WriteString(", machine " + quote(e.Machine))
	}
	if e.Field != "" {
		b.WriteString(", field " + e.Field)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
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
	if !ValidMachineID(machineID) {
		return Result{}, errorf(machineID, "id", fmt.Errorf("%w: %q is not a machine ID", ErrMachineNotFound, machineID))
	}
	base, err := url.Parse(c.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return Result{}, fmt.Errorf("reinstall: client: base URL %q is not an http or https URL", c.BaseURL)
	}
	u := base.JoinPath("v1", "machine", machineID, "reinstall")
	body, err := json.Marshal(RequestBody{Image: image})
	if err != nil {
		return Result{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("reinstall: machine %s: %w", quote(machineID), err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return Result{}, fmt.Errorf("reinstall: machine %s: reading the answer: %w", quote(machineID), err)
	}
	if resp.StatusCode != http.StatusAccepted {
		e := &APIError{StatusCode: resp.StatusCode}
		var eb ErrorBody
		if json.Unmarshal(answer, &eb) == nil && eb.Code != "" {
			e.Code, e.Message, e.Machine, e.Field = eb.Code, eb.Message, eb.Machine, eb.Field
		} else {
			e.Message = strings.TrimSpace(string(answer[:min(len(answer), 200)]))
		}
		return Result{}, e
	}
	var res Result
	if err := json.Unmarshal(answer, &res); err != nil {
		return Result{}, fmt.Errorf("reinstall: machine %s: decoding the answer: %w", quote(machineID), err)
	}
	if res.Machine != machineID {
		return Result{}, errors.New("reinstall: the server answered for another machine")
	}
	return res, nil
}
