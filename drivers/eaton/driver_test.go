package eaton

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

func TestOptionsFromParams(t *testing.T) {
	a, err := fence.ParseAddress("eaton://pdu-7:1161")
	require.NoError(t, err)
	o, err := OptionsFromParams(a, fence.NewParams("snmp-version", "2c", "community", secret, "pdu-model", ModelSwitched))
	require.NoError(t, err)
	assert.Equal(t, Options{Host: "pdu-7", Port: 1161, Version: "2c", Community: fence.NewSecret(secret), Model: ModelSwitched}, o)
	var pe *fence.ParamError
	_, err = OptionsFromParams(a, fence.NewParams("pdu_model", "rpdu"))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "pdu_model", pe.Key)
	_, err = OptionsFromParams(fence.Address{Driver: "apc", Host: "x"}, nil)
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "address", pe.Key)
}
