package eaton

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/fencekit/fencekit/internal/redact"
)

// The types that hold credentials print without them (%v, %+v, %#v, %s,
// slog): see internal/redact.

// Format prints the options with their secrets redacted.
func (o Options) Format(f fmt.State, verb rune) { redact.Format(f, o) }

// String returns the options with their secrets redacted.
func (o Options) String() string { return redact.Struct(o) }

// LogValue is the options with their secrets redacted, for slog.
func (o Options) LogValue() slog.Value { return slog.StringValue(redact.Struct(o)) }

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }
