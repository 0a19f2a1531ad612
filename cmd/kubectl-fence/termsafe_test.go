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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// kubectl fence status on the real API server says what holds now: seconds
// into a new incident, the last incident's confirmation (and one written
// for it) is past, not "refused, confirm again", and no confirm command is
// offered while the devices are still tried; a recovered node shows no
// confirmer and no "Succeeded" of its last fencing as if it held now.
func TestStatusShowsThePresent(t *testing.T) {
	k := setUp(t)
	again, back := "again-"+kubetest.UniqueName(t), "back-"+kubetest.UniqueName(t)
	k.node(t, again, corev1.ConditionUnknown)
	k.node(t, back, corev1.ConditionTrue)
	last, now := micro(time.Now().Add(-time.Hour)), micro(time.Now().Add(-5*time.Second))
	k.nodeFence(t, again, v1alpha1.NodeFenceStatus{Step: "power_management", Status: "Running", Created: last, Incident: now,
		Message:             "switching bmc off",
		Confirmation:        &v1alpha1.NodeFenceConfirmed{By: "alice", Reason: "rack dark", Incident: *last, At: *last},
		ConfirmationRefused: "it names the incident that began an hour ago, not the current one: confirm again",
	})
	code, stdout, stderr := kubectlFence(t, "status", again, "--kubeconfig", k.kubeconfig)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "Confirmed by:")
	assert.Regexp(t, `Earlier: +confirmed off by alice for the incident that began `+last.UTC().Format(time.RFC3339)+` \(over; it does not count now\)`, stdout)
	assert.NotContains(t, stdout, "kubectl fence confirm", "no confirm command while the devices are tried")

	k.nodeFence(t, back, v1alpha1.NodeFenceStatus{Step: "recovery", Status: "Done", Created: last, Incident: last, Message: "recovered",
		Confirmation: &v1alpha1.NodeFenceConfirmed{By: "alice", Reason: "rack dark", Incident: *last, At: *last},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: "NodeFencedPodsReleased",
			Message: "the node is fenced and its pods released", LastTransitionTime: metav1.NewTime(last.Time)}}})
	code, stdout, stderr = kubectlFence(t, "status", back, "--kubeconfig", k.kubeconfig)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "Confirmed by:")
	assert.NotContains(t, stdout, "Succeeded:")
	assert.Regexp(t, `Recovered: +the node is back; its last fencing is over`, stdout)
}
