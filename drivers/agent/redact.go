package agent

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/fencekit/fencekit/internal/redact"
)

// The types that hold credentials print without them (%v, %+v, %#v, %s,
// slog): see internal/redact.

// Format prints the options with their secrets redacted.
func (o Options) Format(f fmt.State, verb rune) { io.WriteString(f, o.String()) }

// String returns the options with their secrets redacted: the secret
// parameters, and the values of Env (a proxy URL may hold a password).
func (o Options) String() string {
	c := o
	c.Env = nil
	for _, e := range o.Env {
		k, _, _ := strings.Cut(e, "=")
		c.Env = append(c.Env, k+"="+redact.Redacted)
	}
	return redact.Struct(c)
}

// LogValue is the options with their secrets redacted, for slog.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }

// String names the agent the device runs; never its parameters.
func (d *Device) String() string { return "agent " + d.name }
