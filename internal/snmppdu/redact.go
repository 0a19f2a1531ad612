package snmppdu

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/fencekit/fencekit/internal/redact"
)

// Config and Device hold credentials; they print without them (%v, %+v,
// %#v, %s, slog): see internal/redact.

// Format prints the configuration with its secrets redacted.
func (c Config) Format(f fmt.State, verb rune) { redact.Format(f, c) }

// String returns the configuration with its secrets redacted.
func (c Config) String() string { return redact.Struct(c) }

// LogValue is the configuration with its secrets redacted, for slog.
func (c Config) LogValue() slog.Value { return slog.StringValue(redact.Struct(c)) }

// Format prints the device as String does, whatever the verb.
func (d *Device) Format(f fmt.State, verb rune) { io.WriteString(f, d.String()) }

// LogValue is the device's String, for slog.
func (d *Device) LogValue() slog.Value { return slog.StringValue(d.String()) }
