package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	fast := timing{
		heartbeatGrace: 10 * time.Millisecond,
		powerAfter:     50 * time.Millisecond,
		boot:           50 * time.Millisecond,
		fcSwitch:       20 * time.Millisecond,
		pdu:            30 * time.Millisecond,
	}
	require.NoError(t, run(t.Context(), &out, fast), out.String())
	s := out.String()
	for _, want := range []string{
		"fc-off     off     confirmed off by the device",
		"bmc-reboot status  not-done",
		"level 1 had failed, so the next level ran",
		"pdu-off    off     confirmed off",
		"pdu-on     on      confirmed on",
		"isolation:        level 1 of 1, node verified fenced",
		"power_management: level 2 of 2, node verified fenced",
		"recovery:         level 1 of 1, done",
		"fc-on      on      confirmed on",
	} {
		assert.Contains(t, s, want)
	}
	for _, secret := range []string{"fc-secret", "pdu-secret", "bmc-secret"} {
		assert.NotContains(t, s, secret)
	}
}
