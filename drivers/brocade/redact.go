package brocade

import (
	"fmt"
	"io"
	"log/slog"

	secret "github.com/fencekit/fencekit/internal/redact"
)

// The types that hold credentials print without them (%v, %+v, %#v, %s,
// slog): see internal/redact.

// Format prints the options with their secrets redacted.
func (o Options) Format(f fmt.State, verb rune) { secret.Format(f, o) }

// String returns the options with their secrets redacted.
func (o Options) String() string { return secret.Struct(o) }

// LogValue is the options with their secrets redacted, for slog.
func (o Options) LogValue() slog.Value { return slog.StringValue(secret.Struct(o)) }

// Format prints the device as String does, whatever the verb: its fields
// hold credentials.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }

// String returns the device's address, brocade+ssh://host:port; never its
// credentials.
func (d *Device) String() string { return "brocade+ssh://" + d.addr }
