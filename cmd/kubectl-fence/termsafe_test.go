package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/fencekit/fencekit/api/v1alpha1"
	"github.com/fencekit/fencekit/internal/kubetest"
)

// hostile is what a device's error or a person's reason can hold: a window
// title (OSC ... BEL), a screen clear, backspaces over the truth, a
// carriage return, a right-to-left override, a C1 CSI, DEL and a byte that
// is not UTF-8.
const hostile = "\x1b]0;pwned\x07\x1b[2J\b\b\bFENCED OK\r\u202eKO\u009b2J\x7f\xff"

func TestTermSafeEscapes(t *testing.T) {
	var b bytes.Buffer
	w := &termSafe{w: &b}
	_, err := w.Write([]byte("a\tb\n" + hostile + "\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, "a\tb\n"+`\x1b]0;pwned\x07\x1b[2J\x08\x08\x08FENCED OK\x0d\u202eKO\x9b2J\x7f\xff`+"\n", b.String())

	// A rune split across writes arrives whole; one never completed is
	// escaped byte by byte.
	b.Reset()
	rlo := []byte("\u202e")
	_, _ = w.Write([]byte("é"[:1]))
	_, _ = w.Write([]byte("é"[1:]))
	_, _ = w.Write(rlo[:2])
	_, _ = w.Write(rlo[2:])
	_, _ = w.Write(rlo[:2])
	require.NoError(t, w.Close())
	assert.Equal(t, `é\u202e\xe2\x80`, b.String())
}

// kubectl fence status on the real API server, over a record whose every
// text field is hostile: nothing reaches the terminal but printing
// characters, newlines and spaces.
func TestStatusPrintsNoControlSequence(t *testing.T) {
	k := setUp(t)
	node := "esc-" + kubetest.UniqueName(t)
	k.node(t, node, corev1.ConditionUnknown)
	began := micro(time.Now().Add(-time.Minute))
	k.nodeFence(t, node, v1alpha1.NodeFenceStatus{Step: "power_management", Status: "Failed", Created: began, Incident: began,
		Message:             "level 1 failed: " + hostile,
		ConfirmationRefused: hostile,
		Jobs:                []v1alpha1.NodeFenceJob{{Step: "power_management", Method: "bmc" + hostile, Phase: "off", Started: began, Finished: began, Error: hostile}},
		History:             []v1alpha1.NodeFenceTransition{{Time: began, Step: "power_management", Status: "Failed", Message: hostile}},
	})
	for _, args := range [][]string{{"status"}, {"status", node}} {
		code, stdout, stderr := kubectlFence(t, append(args, "--kubeconfig", k.kubeconfig)...)
		require.Equal(t, exitOK, code, stderr)
		for _, r := range stdout {
			if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
				t.Fatalf("kubectl fence %v printed %U raw:\n%q", args, r, stdout)
			}
		}
		assert.Contains(t, stdout, `\x1b]0;pwned\x07`, "%v", args)
		assert.False(t, strings.Contains(stdout, "\x1b"), "%v", args)
	}
}
