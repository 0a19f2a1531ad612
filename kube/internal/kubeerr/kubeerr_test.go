package kubeerr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fencekit/fencekit/kube/internal/kubeerr"
)

func TestFormat(t *testing.T) {
	var b strings.Builder
	b.WriteString("pkg: ")
	kubeerr.Object(&b, "ns", "name")
	kubeerr.Tail(&b, "patch", "metadata.labels", errors.New("conflict"))
	assert.Equal(t, "pkg: ns/name: patch metadata.labels: conflict", b.String())

	b.Reset()
	kubeerr.Object(&b, "", "node-1")
	kubeerr.Tail(&b, "get", "", nil)
	assert.Equal(t, "node-1: get", b.String())
}
