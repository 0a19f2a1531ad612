package reboot

// The rules beyond the design's sentences: what production taught (force,
// failed power operations), malformed values, timestamps and the API's
// small contracts.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "a force flag for hosts that are not provisioned (others are left alone)"
func TestNotProvisionedHostsLeftAloneUnlessForced(t *testing.T) {
	np := func(f func(*Input)) Input {
		return with(with(base(), func(in *Input) { in.Provisioning = NotProvisioned }), f)
	}
	// Left alone: no reboot started, nothing removed.
	for _, a := range []map[string]string{
		ann(Annotation, ""), ann(KeyedAnnotation("a"), `{"mode":"hard"}`), ann(Annotation, `{"force":"yes"}`),
	} {
		d := Decide(np(func(in *Input) { in.Annotations = a }))
		assert.True(t, d.Nothing(), "%v: %s", a, d)
		assert.Equal(t, ReasonLeftAlone, d.Reason)
		d = Decide(np(func(in *Input) { in.Annotations, in.PoweredOn = a, false }))
		assert.Empty(t, d.RemoveAnnotations, "%v: %s", a, d)
	}
	// A plain annotation left alone does not keep the host off; a keyed one
	// does (the host is never powered on against a keyed annotation).
	d := Decide(np(func(in *Input) { in.Annotations, in.PoweredOn = ann(Annotation, ""), false }))
	assert.True(t, d.PowerOn, "%s", d)
	d = Decide(np(func(in *Input) { in.Annotations, in.PoweredOn = ann(KeyedAnnotation("a"), ""), false }))
	assert.False(t, d.PowerOn, "%s", d)
	assert.True(t, d.HeldOff)
	// Spec.Online is still obeyed.
	d = Decide(np(func(in *Input) { in.Annotations, in.Online = ann(Annotation, ""), false }))
	assert.True(t, d.PowerOff)
	assert.Equal(t, ReasonOnlineFalse, d.Reason)

	// Forced by the value: that request counts, the others still do not.
	d = Decide(np(func(in *Input) {
		in.Annotations = ann(KeyedAnnotation("a"), `{"force":true}`, KeyedAnnotation("b"), `{"mode":"hard"}`)
	}))
	assert.True(t, d.PowerOff)
	assert.True(t, d.SetPendingRebootSince)
	assert.Equal(t, Soft, d.Mode, "the unforced hard request does not count")
	d = Decide(np(func(in *Input) { in.Annotations = ann(Annotation, `{"mode":"hard","force":true}`) }))
	assert.True(t, d.PowerOff)
	assert.Equal(t, Hard, d.Mode)
	// Forced by the caller: every request counts.
	d = Decide(np(func(in *Input) {
		in.Force, in.Annotations = true, ann(KeyedAnnotation("a"), "", KeyedAnnotation("b"), `{"mode":"hard"}`)
	}))
	assert.True(t, d.PowerOff)
	assert.Equal(t, Hard, d.Mode)
	// A forced plain request is served like any other.
	d = Decide(np(func(in *Input) {
		in.PoweredOn, in.PendingRebootSince, in.Annotations = false, at(50), ann(Annotation, `{"force":true}`)
	}))
	assert.Equal(t, []string{Annotation}, d.RemoveAnnotations)
	// Force changes nothing for a provisioned host.
	a := ann(Annotation, `{"force":true}`)
	assert.Equal(t, Decide(with(base(), func(in *Input) { in.Annotations = a })),
		Decide(with(base(), func(in *Input) { in.Annotations, in.Force = a, true })))
}

// "a host with a failed power operation is rebooted hard"
func TestFailedPowerOperationRebootsHard(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"reboot requested", with(base(), func(in *Input) { in.Annotations = ann(Annotation, "") })},
		{"reboot pending", with(base(), func(in *Input) { in.PendingRebootSince = at(50) })},
		{"hard requested too", with(base(), func(in *Input) { in.Annotations = ann(Annotation, `{"mode":"hard"}`) })},
		{"Spec.Online false", with(base(), func(in *Input) { in.Online = false })},
	} {
		d := Decide(tc.in)
		require.True(t, d.PowerOff, tc.name)
		assert.Equal(t, tc.in.Annotations[Annotation] == `{"mode":"hard"}`, d.Mode == Hard, "%s without a failure", tc.name)
		tc.in.LastPowerFailed = true
		d = Decide(tc.in)
		assert.Equal(t, Hard, d.Mode, tc.name)
		assert.Equal(t, ModePowerFailed, d.ModeSource, tc.name)
	}
	// A failed power operation changes nothing else.
	in := with(base(), func(in *Input) { in.PoweredOn, in.LastPowerFailed = false, true })
	assert.True(t, Decide(in).PowerOn)
}

// "A malformed annotation value never blocks or silently changes a
// reboot's safety"
func TestMalformedValueNeverBlocksNorChangesSafety(t *testing.T) {
	for _, tc := range []struct {
		value   string
		mode    Mode
		force   bool
		problem string // a part of the problem; "" for none
	}{
		{"", Soft, false, ""},
		{"   ", Soft, false, ""},
		{"{}", Soft, false, ""},
		{`{"mode":"hard"}`, Hard, false, ""},
		{`{"mode":"soft","force":true}`, Soft, true, ""},
		{"machine-7f9c1a2e", Soft, false, ""},
		{`"a JSON string"`, Soft, false, ""},
		{"[1,2]", Soft, false, ""},
		// Malformed JSON: soft, not forced, reported.
		{`{'mode':'hard'}`, Soft, false, "double quotes"},
		{`{"mode":"hard"`, Soft, false, "not valid JSON"},
		{`{"mode":"hard",}`, Soft, false, "not valid JSON"},
		{`{"mode":"hard","force":true} x`, Soft, false, "text after the object"},
		{`{"mode":"hard","force":tru}`, Soft, false, "not valid JSON"},
		{"{\"mode\":\"ha\x01rd\"}", Soft, false, "control character"},
		{`{"mode":"hard\q"}`, Soft, false, "bad escape"},
		{`{mode:hard}`, Soft, false, "member name"},
		{`{"a":[1,2}`, Soft, false, "not valid JSON"},
		{`{"a":01}`, Soft, false, "not valid JSON"},
		{strings.Repeat("[", 10) + "{", Soft, false, ""}, // not an object: an opaque token
		{`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, Soft, false, "nested too deep"},
		// Unknown modes: soft, reported; never a guess at hard.
		{`{"mode":"HARD"}`, Soft, false, `mode "HARD" is neither`},
		{`{"mode":"medium"}`, Soft, false, `mode "medium" is neither`},
		{`{"mode":1}`, Soft, false, "not a string"},
		{`{"mode":null}`, Soft, false, "not a string"},
		{`{"mode":"hard-reboot-please-now-and-fast"}`, Soft, false, "is neither"},
		// Names match without regard to case, as with encoding/json.
		{`{"Mode":"hard"}`, Hard, false, `member "Mode" read as "mode"`},
		{`{"FORCE":true}`, Soft, true, `member "FORCE" read as "force"`},
		// Duplicates: the last counts, as with encoding/json.
		{`{"mode":"hard","mode":"soft"}`, Soft, false, "mode given 2 times"},
		{`{"mode":"soft","mode":"hard"}`, Hard, false, "mode given 2 times"},
		// A bad force is false: a host that is not provisioned stays alone.
		{`{"force":"true"}`, Soft, false, "force \"true\" is neither"},
		{`{"force":1,"mode":"hard"}`, Hard, false, "force 1 is neither"},
		// Opaque values that mention a mode are reported.
		{"hard", Soft, false, "not a JSON object"},
		{"mode=hard", Soft, false, "not a JSON object"},
	} {
		mode, force, problem := ParseValue(tc.value)
		name := tc.value
		if len(name) > 40 {
			name = name[:40]
		}
		assert.Equal(t, tc.mode, mode, "%q", name)
		assert.Equal(t, tc.force, force, "%q", name)
		if tc.problem == "" {
			assert.Empty(t, problem, "%q", name)
		} else {
			assert.Contains(t, problem, tc.problem, "%q", name)
		}
		// Whatever the value, the annotation is a request: it never blocks
		// a reboot, a keyed one always holds the host off, and a problem is
		// always in the decision.
		for _, key := range []string{Annotation, KeyedAnnotation("k")} {
			d := Decide(with(base(), func(in *Input) { in.Annotations = ann(key, tc.value) }))
			assert.True(t, d.PowerOff, "%q", name)
			assert.Equal(t, tc.mode, d.Mode, "%q", name)
			assert.Equal(t, problem != "", len(d.Problems) == 1, "%q", name)
			off := with(base(), func(in *Input) {
				in.PoweredOn, in.PendingRebootSince, in.Annotations = false, at(50), ann(key, tc.value)
			})
			d = Decide(off)
			assert.False(t, d.PowerOn, "%q", name)
		}
	}
}

func TestParseAnnotations(t *testing.T) {
	reqs, problems := ParseAnnotations(ann(
		KeyedAnnotation("b"), `{"mode":"hard"}`,
		Annotation, "",
		KeyedAnnotation("a"), `{"mode":"x"}`,
		KeyedAnnotation(""), "",
		"reboot.metal.io", "",
		"reboot.metal.io/x", "",
		"reboot.metal3.iox", "",
		"other", "",
	))
	require.Len(t, reqs, 4)
	assert.Equal(t, Request{Annotation: Annotation, Value: ""}, reqs[0])
	assert.Equal(t, KeyedAnnotation(""), reqs[1].Annotation)
	assert.True(t, reqs[1].Keyed(), "a keyed annotation with an empty key is still keyed")
	assert.Contains(t, reqs[1].Problem, "empty key")
	assert.Equal(t, "a", reqs[2].Key)
	assert.Contains(t, reqs[2].Problem, `mode "x"`)
	assert.Equal(t, Request{Annotation: KeyedAnnotation("b"), Key: "b", Mode: Hard, Value: `{"mode":"hard"}`}, reqs[3])
	assert.False(t, reqs[0].Keyed())
	var names []string
	for _, p := range problems {
		names = append(names, p.Annotation)
	}
	assert.Equal(t, []string{"reboot.metal.io", "reboot.metal.io/x", KeyedAnnotation(""), KeyedAnnotation("a")}, names)

	_, ok := ParseRequest("other", "")
	assert.False(t, ok)
	assert.True(t, IsAnnotation(Annotation))
	assert.True(t, IsAnnotation(KeyedAnnotation("x")))
	assert.False(t, IsAnnotation("reboot.metal3.io.x"))

	a := ann("a", "1", "b", "2", "c", "3")
	assert.Zero(t, testing.AllocsPerRun(100, func() { ParseAnnotations(a) }), "no reboot annotation: no allocation")
}

func TestDecideAllocations(t *testing.T) {
	for name, in := range map[string]Input{
		"no annotations":          base(),
		"unrelated annotations":   with(base(), func(in *Input) { in.Annotations = ann("a", "1", "b", "2", "reboot.metal3.iox", "") }),
		"two annotations":         with(base(), func(in *Input) { in.Annotations = ann(Annotation, "", KeyedAnnotation("a"), `{"mode":"hard"}`) }),
		"held off":                with(base(), func(in *Input) { in.PoweredOn, in.Annotations = false, ann(KeyedAnnotation("a"), `{"mode":"hard"}`) }),
		"power on with precision": with(base(), func(in *Input) { in.PoweredOn, in.Precision = false, time.Second }),
	} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { Decide(in) }), name)
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	in := with(base(), func(in *Input) {
		in.Provisioning = Deprovisioning
		in.Annotations = ann(Annotation, "{", KeyedAnnotation("z"), "{", KeyedAnnotation("a"), "{", KeyedAnnotation("m"), `{"mode":1}`, "reboot.metal.io", "")
	})
	want := Decide(in)
	assert.Equal(t, []string{Annotation, KeyedAnnotation("a"), KeyedAnnotation("m"), KeyedAnnotation("z")}, want.RemoveAnnotations)
	require.Len(t, want.Problems, 5)
	for range 50 {
		require.Equal(t, want, Decide(in))
	}
}

func TestClockBehindTheStatus(t *testing.T) {
	for _, p := range []time.Duration{0, time.Second} {
		// The clock is behind lastPoweredOn: the reboot still starts, with
		// pendingRebootSince just after lastPoweredOn.
		in := with(base(), func(in *Input) {
			in.Annotations, in.LastPoweredOn, in.Now, in.Precision = ann(Annotation, ""), at(200), at(100), p
		})
		d := Decide(in)
		require.True(t, d.SetPendingRebootSince)
		assert.True(t, d.PendingRebootSince.After(in.LastPoweredOn), "precision %v", p)
		assert.Equal(t, at(200).Add(max(p, 1)), d.PendingRebootSince)
		require.Len(t, d.Problems, 1)
		assert.Equal(t, problemClockBehindPowerOn, d.Problems[0].Message)
		// The clock is behind pendingRebootSince at power on: lastPoweredOn
		// still ends the reboot.
		in = with(base(), func(in *Input) {
			in.PoweredOn, in.PendingRebootSince, in.LastPoweredOn, in.Now, in.Precision = false, at(300), at(200), at(100), p
		})
		d = Decide(in)
		require.True(t, d.PowerOn)
		assert.Equal(t, at(300), d.LastPoweredOn)
		assert.False(t, d.RebootPending)
		require.Len(t, d.Problems, 1)
		assert.Equal(t, problemClockBehindPending, d.Problems[0].Message)
	}
	// Equal times, or a difference within the precision, are no problem.
	d := Decide(with(base(), func(in *Input) { in.Annotations, in.Now = ann(Annotation, ""), t0 }))
	assert.Empty(t, d.Problems)
	assert.Equal(t, t0.Add(1), d.PendingRebootSince)
	d = Decide(with(base(), func(in *Input) {
		in.Annotations, in.LastPoweredOn, in.Now, in.Precision = ann(Annotation, ""), at(101), at(100.5), time.Second
	}))
	assert.Empty(t, d.Problems)
	assert.Equal(t, at(102), d.PendingRebootSince)
}

func TestDecisionString(t *testing.T) {
	d := Decide(with(base(), func(in *Input) { in.Annotations = ann(Annotation, "{'mode':'hard'}") }))
	assert.Equal(t, "set pendingRebootSince=2024-05-01T12:01:40Z, power off soft (default): "+ReasonRebootRequested+
		" [problems: reboot.metal3.io: "+d.Problems[0].Message+"]", d.String())
	d = Decide(base())
	assert.Equal(t, "nothing to do: "+ReasonOn, d.String())
	d = Decide(with(base(), func(in *Input) { in.PoweredOn = false }))
	assert.Equal(t, "power on, set lastPoweredOn=2024-05-01T12:01:40Z: "+ReasonPowerOn, d.String())
	d = Decide(with(base(), func(in *Input) {
		in.Provisioning, in.PendingRebootSince, in.Annotations = Deprovisioning, at(1), ann(Annotation, "")
	}))
	assert.Equal(t, "remove reboot.metal3.io, clear pendingRebootSince: "+ReasonDeprovisioning, d.String())
	assert.Equal(t, "provisioned", Provisioned.String())
	assert.Equal(t, "not-provisioned", NotProvisioned.String())
	assert.Equal(t, "deprovisioning", Deprovisioning.String())
	assert.Equal(t, "hard", Hard.String())
	assert.Equal(t, "power-failed", ModePowerFailed.String())
	assert.Equal(t, "requested", ModeRequested.String())
	assert.Equal(t, "clock", Problem{Message: "clock"}.String())
}
