package reboot

// Golden transcripts: testdata/*.txt are scenarios in a small language, each
// command followed by "----" and what it printed. Run
//
//	go test ./reboot -run Golden -rewrite
//
// to write what the commands print now into the files, then review the diff.
//
// The commands (one per line; '#' lines are comments):
//
//	host k=v...        set state=provisioned|not-provisioned|deprovisioning,
//	                   online=true|false, force=true|false, precision=DURATION
//	annotate KEY [V]   a client sets annotation KEY to V (the rest of the line)
//	remove KEY         a client removes annotation KEY
//	tick DURATION      the clock moves (it may move back)
//	flap on|off        the host's power changes by itself
//	device FAULT       the BMC's behaviour from now on: ok (no fault), down,
//	                   soft-off=fail, soft-off=ignore
//	reconcile          the controller decides once and applies the decision
//	settle             reconcile until a decision has nothing to do
//
// The host starts provisioned, on and online, booted an hour before the
// clock's start t, with no annotation. Its power is a fake BMC driven
// through Power, with a soft timeout of 20ms.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/transcript"
)

func TestGolden(t *testing.T) {
	transcript.RunDir(t, func(*testing.T) transcript.Runner { return newScenario().run })
}

// scenario is a simulated host with a fake BMC and the controller.
type scenario struct {
	h       *host
	dev     *fake.Device
	m       *fence.Method
	removes []func()
	last    string // the device line of the last power operation
}

func newScenario() *scenario {
	s := &scenario{h: newHost(), dev: fake.New(fake.Options{Plugs: []string{""}})}
	s.m = &fence.Method{Name: "bmc", Node: "host-0", Driver: "fake", Device: s.dev,
		Options: fence.Options{PollInterval: time.Millisecond, PowerTimeout: 200 * time.Millisecond}}
	s.h.read = func() bool { return s.dev.Truth("") == fence.StateOn }
	s.h.power = func(d Decision) (bool, error) {
		s.dev.ResetCalls()
		_, err := Power(context.Background(), s.m, d, 20*time.Millisecond)
		on := s.dev.Truth("") == fence.StateOn
		line := fmt.Sprintf("device: soft-off %d, set %d, now %v", s.dev.Calls(fake.OpSoftOff), s.dev.Calls(fake.OpSet), s.dev.Truth(""))
		switch {
		case err == nil:
		case fence.IsNotDone(err):
			line += ", failed (not done)"
		default:
			line += ", failed (outcome unknown)"
		}
		s.last = line
		return on, err
	}
	return s
}

func (s *scenario) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(t0)
	if d < 0 {
		return "t" + d.String()
	}
	return "t+" + d.String()
}

func (s *scenario) state() string {
	h := s.h
	h.input() // read the power
	var b strings.Builder
	fmt.Fprintf(&b, "state: now=%s power=%s online=%v %v pending=%s lastPoweredOn=%s",
		s.rel(h.now), map[bool]string{true: "on", false: "off"}[h.on], h.online, h.prov, s.rel(h.pending), s.rel(h.last))
	if h.failed {
		b.WriteString(" power-failed")
	}
	if h.force {
		b.WriteString(" force")
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range h.ann {
			if !yield(k) {
				return
			}
		}
	})
	b.WriteString(" annotations=[")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(k)
		if v := h.ann[k]; v != "" {
			b.WriteString("=" + v)
		}
	}
	b.WriteString("]")
	return b.String()
}

func (s *scenario) reconcile() []string {
	s.last = ""
	d := s.h.step()
	out := []string{"decide: " + d.Format(s.rel)}
	if s.last != "" {
		out = append(out, s.last)
	}
	return out
}

func (s *scenario) run(cmd string) ([]string, error) {
	verb, rest, _ := strings.Cut(cmd, " ")
	h := s.h
	switch verb {
	case "host":
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			switch k {
			case "state":
				switch v {
				case "provisioned":
					h.prov = Provisioned
				case "not-provisioned":
					h.prov = NotProvisioned
				case "deprovisioning":
					h.prov = Deprovisioning
				default:
					return nil, fmt.Errorf("unknown state %q", v)
				}
			case "online":
				h.online, err = strconv.ParseBool(v)
			case "force":
				h.force, err = strconv.ParseBool(v)
			case "precision":
				h.precision, err = time.ParseDuration(v)
			default:
				return nil, fmt.Errorf("unknown host setting %q", k)
			}
			if err != nil {
				return nil, err
			}
		}
	case "annotate":
		k, v, _ := strings.Cut(rest, " ")
		h.ann[k] = v
	case "remove":
		if _, ok := h.ann[rest]; !ok {
			return nil, fmt.Errorf("no annotation %q", rest)
		}
		delete(h.ann, rest)
	case "tick":
		d, err := time.ParseDuration(rest)
		if err != nil {
			return nil, err
		}
		h.now = h.now.Add(d)
	case "flap":
		st, err := fence.ParseState(rest)
		if err != nil {
			return nil, err
		}
		s.dev.SetTruth("", st)
	case "device":
		for _, r := range s.removes {
			r()
		}
		s.removes = nil
		switch rest {
		case "ok":
		case "down":
			s.removes = append(s.removes, s.dev.Inject(fake.Fault{Kind: fake.Down}))
		case "soft-off=fail":
			s.removes = append(s.removes, s.dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Fail}))
		case "soft-off=ignore":
			s.removes = append(s.removes, s.dev.Inject(fake.Fault{Op: fake.OpSoftOff, Kind: fake.Ignore}))
		default:
			return nil, fmt.Errorf("unknown device behaviour %q", rest)
		}
		return []string{"device: " + rest}, nil
	case "reconcile":
		return append(s.reconcile(), s.state()), nil
	case "settle":
		var out []string
		for range 20 {
			lines := s.reconcile()
			out = append(out, lines...)
			if strings.HasPrefix(lines[0], "decide: nothing to do") {
				return append(out, s.state()), nil
			}
		}
		return nil, fmt.Errorf("not settled after 20 decisions:\n%s", strings.Join(out, "\n"))
	default:
		return nil, fmt.Errorf("unknown command %q", verb)
	}
	return []string{s.state()}, nil
}
