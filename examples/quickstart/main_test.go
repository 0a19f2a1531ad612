package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/internal/ipmisim"
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
		"bmc-reboot off     confirmed off by the device",
		"bmc-reboot on      confirmed on by the device",
		"isolation:        level 1 of 1, node verified fenced",
		"power_management: level 1 of 2, node verified fenced",
		"recovery:         level 1 of 1, done",
		"fc-on      on      confirmed on",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "pdu-off    off", "the PDU is only the fallback")
	for _, secret := range []string{"fc-secret", "pdu-secret", ipmisim.DefaultPassword} {
		assert.NotContains(t, s, secret)
	}
}
