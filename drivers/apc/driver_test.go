package apc

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

func TestOptionsFromParams(t *testing.T) {
	a, err := fence.ParseAddress("apc://pdu-7")
	require.NoError(t, err)
	o, err := OptionsFromParams(a, fence.NewParams("snmp-version", "2c", "community", secret, "pdu-model", ModelMasterSwitch))
	require.NoError(t, err)
	assert.Equal(t, Options{Host: "pdu-7", Version: "2c", Community: fence.NewSecret(secret), Model: ModelMasterSwitch}, o)
	_, err = OptionsFromParams(a, fence.NewParams("snmp-version", "3", "username", "u", "password", "2short"))
	var pe *fence.ParamError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "password", pe.Key)
	assert.NotContains(t, err.Error(), "2short")
	_, err = OptionsFromParams(a, fence.NewParams("pdu_model", "managed"))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "pdu_model", pe.Key)
	_, err = New(Options{})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ip", pe.Key)
}
