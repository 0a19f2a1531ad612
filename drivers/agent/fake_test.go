package agent

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

// These tests run fake agents, shell scripts written by the tests, that
// misbehave: they hang, print garbage, print a password, print without
// end. Each must end in a clear error, in time, with no secret in it, and
// never in a success.

// hangBody starts a child that never ends, records its PID, and waits.
const hangBody = `sleep 600 &
echo $! > "$dir/child"
wait`

func TestHangKilledByTimeout(t *testing.T) {
	f := newFake(t, "fence_hang", commonParams, commonActions, hangBody)
	d := f.open(t, Options{Params: stdParams(), Timeout: 1500 * time.Millisecond})
	start := time.Now()
	st, err := d.Status(context.Background(), "")
	took := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, fence.StateUnknown, st)
	assert.Less(t, took, 1500*time.Millisecond+10*time.Second, "the run outlived its timeout by far")
	assert.GreaterOrEqual(t, took, 1400*time.Millisecond)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.True(t, ae.Timeout())
	assert.Equal(t, -1, ae.Exit)
	msg := err.Error()
	for _, want := range []string{"fence_hang", "127.0.0.1:6230", "status", "timeout of 1.5s"} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, secret)

	// The whole process group went: the child too.
	pid, err := strconv.Atoi(strings.TrimSpace(f.read("child")))
	require.NoError(t, err, "the fake recorded no child")
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, processGone(pid), "the agent's child %d outlived the kill", pid)
}

func TestHangKilledByContext(t *testing.T) {
	f := newFake(t, "fence_hang", commonParams, commonActions, hangBody)
	d := f.open(t, Options{Params: stdParams()})
	for _, s := range []fence.State{fence.StateOff, fence.StateOn} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		err := d.Set(ctx, "", s)
		took := time.Since(start)
		cancel()
		require.Error(t, err)
		assert.Less(t, took, 11*time.Second)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, fence.IsOutcomeUnknown(err), "a Set killed mid-run may have acted: %v", err)
		assert.False(t, fence.IsNotDone(err))
		assert.Contains(t, err.Error(), "fence_hang")
		assert.Contains(t, err.Error(), ": "+s.String()+": ")
		assert.NotContains(t, err.Error(), secret)
	}
}

// TestHangThroughEngine runs a hanging agent through the registry and
// fence.Do: the error names the node, the method, the driver and the
// device, within io_timeout, and is no success.
func TestHangThroughEngine(t *testing.T) {
	f := newFake(t, "fence_hang", commonParams, commonActions, hangBody)
	p := stdParams("agent", f.path, "io_timeout", "1", "power_timeout", "2")
	m, err := fence.DefaultRegistry().Open(ctxFor(t, time.Minute), "", &fence.MethodOptions{Node: "worker-7", Name: "pdu-hang", Driver: "agent", Params: p})
	require.NoError(t, err)
	t.Cleanup(func() { Unwrap(m.Device).Close() })
	start := time.Now()
	res, err := fence.Do(ctxFor(t, time.Minute), m, fence.ActionOff)
	took := time.Since(start)
	require.Error(t, err)
	assert.False(t, res.Fenced())
	assert.Less(t, took, 12*time.Second)
	assert.True(t, fence.IsNotDone(err), "the first status read failed: nothing was set: %v", err)
	for _, want := range []string{"worker-7", "pdu-hang", "driver agent", "fence_hang", "127.0.0.1"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), secret)
}

func TestGarbageStatus(t *testing.T) {
	cases := []struct {
		name, body string
	}{
		{"NoStatusLine", `printf 'hello\000\377 world\n'; exit 0`},
		{"OnWithExit2", `echo "Status: ON"; exit 2`},
		{"OffWithExit0", `echo "Status: OFF"; exit 0`},
		{"TwoLines", `echo "Status: ON"; echo "Status: OFF"; exit 0`},
		{"Unknown", `echo "Status: MAYBE"; exit 0`},
		{"Empty", `exit 2`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, "fence_garbage", commonParams, commonActions, c.body)
			d := f.open(t, Options{Params: stdParams()})
			st, err := d.Status(ctxFor(t, time.Minute), "")
			require.Error(t, err)
			assert.Equal(t, fence.StateUnknown, st)
			assert.ErrorIs(t, err, fence.ErrBadState)
			assert.ErrorIs(t, err, ErrGarbage)
			assert.NotContains(t, err.Error(), "\x00")

			// Through the engine: an error, never a success.
			m := &fence.Method{Name: "garbage", Node: "n1", Driver: "agent", Device: d.View(),
				Options: fence.Options{PowerTimeout: time.Second, PollInterval: 50 * time.Millisecond}}
			for _, a := range []fence.Action{fence.ActionOff, fence.ActionStatus, fence.ActionReboot} {
				res, err := fence.Do(ctxFor(t, time.Minute), m, a)
				require.Error(t, err, "%v", a)
				assert.False(t, res.Fenced())
			}
		})
	}
}

func TestGarbageSet(t *testing.T) {
	cases := []struct {
		name, body string
	}{
		{"NoSuccessLine", `echo "all good, honest"; exit 0`},
		{"OppositeState", `if [ "$action" = off ]; then echo "Success: Powered ON"; else echo "Success: Powered OFF"; fi; exit 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, "fence_garbage", commonParams, commonActions, c.body)
			d := f.open(t, Options{Params: stdParams()})
			for _, s := range []fence.State{fence.StateOff, fence.StateOn} {
				err := d.Set(ctxFor(t, time.Minute), "", s)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrGarbage)
				assert.True(t, fence.IsOutcomeUnknown(err))
			}
		})
	}
}

func TestSecretScrubbed(t *testing.T) {
	body := `echo "2026-11-22 11:00:35,197 ERROR: Failed: user admin with password $password refused by 127.0.0.1" >&2
echo "2026-11-22 11:00:35,198 ERROR: Please use '-h' for usage" >&2
exit 1`
	f := newFake(t, "fence_leaky", commonParams, commonActions, body)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Setenv("FENCEKIT_TEST_HOST_SECRET", "host-"+secret)
	d := f.open(t, Options{Params: stdParams(), Logger: logger})

	_, err := d.Status(ctxFor(t, time.Minute), "")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	assert.Contains(t, err.Error(), "Failed: user admin with password REDACTED refused by 127.0.0.1")
	assert.NotContains(t, err.Error(), "Please use '-h'")
	err = d.Set(ctxFor(t, time.Minute), "", fence.StateOff)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	assert.NotContains(t, logs.String(), secret)
	assert.Contains(t, logs.String(), "fence agent run")

	// The password went on standard input, and nowhere else: not on the
	// command line, not in the environment; the host's environment was
	// not inherited.
	assert.Equal(t, "0\n", f.read("argc"))
	assert.Contains(t, f.read("stdin"), "password="+secret+"\n")
	env := f.read("env")
	assert.NotContains(t, env, secret)
	assert.NotContains(t, env, "FENCEKIT_TEST_HOST_SECRET")
	assert.Contains(t, env, "LANG=C\n")
	assert.Contains(t, env, "PYTHONWARNINGS=ignore\n")

	// A secret too short to scrub withholds the output.
	d = f.open(t, Options{Params: stdParams("password", "pw")})
	_, err = d.Status(ctxFor(t, time.Minute), "")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "password pw")
	assert.Contains(t, err.Error(), "withheld")
}

func TestHugeOutput(t *testing.T) {
	for name, body := range map[string]string{
		"Endless": `yes "garbage line $password"`,
		"Stderr":  `yes "ERROR: garbage $password" >&2`,
		"TwoMiB":  `head -c 2097152 /dev/zero | tr '\000' x; echo "Status: ON"; exit 0`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, "fence_chatty", commonParams, commonActions, body)
			d := f.open(t, Options{Params: stdParams(), Timeout: 30 * time.Second})
			start := time.Now()
			st, err := d.Status(context.Background(), "")
			require.Error(t, err)
			assert.Equal(t, fence.StateUnknown, st)
			assert.ErrorIs(t, err, errOutputTooLarge)
			assert.Less(t, time.Since(start), 20*time.Second, "killed at the limit, not at the timeout")
			assert.NotContains(t, err.Error(), secret)
			assert.Less(t, len(err.Error()), 2000)
		})
	}
}

// TestExitCodes checks the classification table of doc.go with a fake
// agent that exits as told.
func TestExitCodes(t *testing.T) {
	body := `cat "$dir/say.err" >&2; cat "$dir/say.out"; exit $(cat "$dir/say.code")`
	f := newFake(t, "fence_says", commonParams, commonActions, body)
	d := f.open(t, Options{Params: stdParams()})
	errLine := func(s string) string { return "2026-11-22 11:00:35,197 ERROR: " + s + "\n\n" }
	cases := []struct {
		code     int
		stderr   string
		sentinel error
		notDone  bool
	}{
		{1, errLine("Unable to connect/login to fencing device"), fence.ErrLoginDenied, true},
		{1, errLine("Failed: The user does not have the correct privileges to do the requested action."), fence.ErrLoginDenied, true},
		{1, errLine("Failed: send_get_request: HTTPSConnectionPool(host='127.0.0.1', port=1): Max retries exceeded (Caused by NewConnectionError('...: Failed to establish a new connection: [Errno 111] Connection refused'))") + errLine("Please use '-h' for usage"), fence.ErrUnreachable, true},
		{1, errLine("Failed: Timed out waiting to power OFF"), fence.ErrTimeout, false},
		{1, errLine("Failed: Timed out waiting to power ON"), fence.ErrTimeout, false},
		{1, errLine("Connection timed out"), fence.ErrUnreachable, false},
		{1, errLine("Connection lost"), fence.ErrUnreachable, false},
		{1, errLine("Failed: Unable to obtain correct plug status or plug is not available"), fence.ErrBadState, false},
		{1, errLine("Failed: Can not find VM UUID by its VM name given in the <plug> parameter."), fence.ErrUnknownPlug, true},
		{1, errLine("Failed: You have to enter plug number or machine identification") + errLine("Please use '-h' for usage"), fence.ErrConfig, true},
		{1, "ERROR:root:Parse error: option --bogus not recognized\n\nERROR:root:Please use '-h' for usage\n", fence.ErrConfig, true},
		{1, errLine("Failed: The value you have entered for --delay is not a valid time in seconds"), fence.ErrConfig, true},
		{1, "Traceback (most recent call last):\n  File \"/usr/sbin/fence_x\", line 1\nConnectionRefusedError: [Errno 111] Connection refused\n", fence.ErrUnreachable, false},
		{1, "Traceback (most recent call last):\n  File \"/usr/sbin/fence_x\", line 1\nKeyError: 'x'\n", ErrAgentFailed, false},
		{1, "something odd\n", ErrAgentFailed, false},
		{1, "", ErrAgentFailed, false},
		{2, "", fence.ErrConfig, true},
		{3, "", fence.ErrLoginDenied, true},
		{4, "", fence.ErrUnreachable, false},
		{5, "", fence.ErrUnreachable, false},
		{6, "", fence.ErrTimeout, false},
		{7, "", fence.ErrTimeout, false},
		{8, "", fence.ErrBadState, false},
		{9, "", fence.ErrBadState, false},
		{10, "", fence.ErrConfig, true},
		{11, "", fence.ErrLoginDenied, true},
		{12, "", fence.ErrUnknownPlug, true},
		{42, "", ErrAgentFailed, false},
		{7, errLine("Connection refused"), fence.ErrUnreachable, true},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d-exit%d", i, c.code), func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, "say.err"), []byte(c.stderr), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, "say.out"), nil, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, "say.code"), []byte(strconv.Itoa(c.code)), 0o644))
			err := d.Set(ctxFor(t, time.Minute), "", fence.StateOff)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.sentinel)
			assert.Equal(t, c.notDone, fence.IsNotDone(err), "not done? %v", err)
			assert.NotEqual(t, c.notDone, fence.IsOutcomeUnknown(err))
			var ae *Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, c.code, ae.Exit)
			assert.Contains(t, err.Error(), "exit status "+strconv.Itoa(c.code))

			st, err := d.Status(ctxFor(t, time.Minute), "")
			require.Error(t, err)
			assert.Equal(t, fence.StateUnknown, st)
			if c.code != 2 {
				assert.ErrorIs(t, err, c.sentinel)
			} else {
				assert.ErrorIs(t, err, fence.ErrBadState, "exit 2 without a Status line")
			}
		})
	}
}

func TestContextDoneNeverRuns(t *testing.T) {
	f := newFake(t, "fence_ok", commonParams, commonActions, `echo "Status: ON"`)
	d := f.open(t, Options{Params: stdParams()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := d.Status(ctx, "")
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	err = d.Set(ctx, "", fence.StateOff)
	assert.True(t, fence.IsNotDone(err), "a Set that never started: %v", err)
	assert.Equal(t, 0, f.runs(), "the agent ran")
}

func TestCloseKillsRuns(t *testing.T) {
	f := newFake(t, "fence_hang", commonParams, commonActions, hangBody)
	d := f.open(t, Options{Params: stdParams()})
	errc := make(chan error, 1)
	go func() { errc <- d.Set(context.Background(), "", fence.StateOff) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.read("child") == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	require.NoError(t, d.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, ErrClosed)
		assert.True(t, fence.IsOutcomeUnknown(err))
	case <-time.After(10 * time.Second):
		t.Fatal("the run survived Close")
	}
	_, err := d.Status(context.Background(), "")
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, fence.IsNotDone(d.Set(context.Background(), "", fence.StateOn)))
	assert.NoError(t, d.Close(), "a second Close")
}

// TestStdin checks what an agent is given: the method's parameters in the
// agent's spelling, checked and converted, the per-call options, and
// nothing of fencekit's own.
func TestStdin(t *testing.T) {
	f := newFake(t, "fence_ok", commonParams, commonActions, `echo "Status: ON"`)
	p := fence.NewParams(
		"ipaddr", "10.0.0.9", "ipport", " 6231 ", "login", "admin", "passwd", " spaced ",
		"ssl_insecure", "no", "lanplus", "false", "shell_timeout", "1.5",
		"power_timeout", "7", "power_wait", "3", "delay", "5", "retry_on", "4", "stonith_status_sleep", "0.2",
		"verbose", "1", "quiet", "1", "method", "cycle",
		"driver", "agent", "agent", "fence_ok", "io_timeout", "9", "retry_off", "1", "soft", "yes",
		"must_sucess", "no", "nodename", "n1", "action", "off", "plug", "",
	)
	d := f.open(t, Options{Params: p})
	st, err := d.Status(ctxFor(t, time.Minute), "")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st)
	want := strings.Join([]string{
		"ip=10.0.0.9",
		"ipport=6231",
		"lanplus=0", // false, and on by default: written 0
		"username=admin",
		`password=" spaced "`,
		"shell_timeout=2",
		"action=status",
		"delay=0",
		"power_wait=0",
		"retry_on=0",
		"stonith_status_sleep=1",
		"power_timeout=7",
	}, "\n") + "\n"
	assert.Equal(t, want, f.read("stdin"))
	assert.Equal(t, "10.0.0.9:6231", d.cfg.host)
}

func TestPowerTimeoutFitsDeadline(t *testing.T) {
	f := newFake(t, "fence_ok", commonParams, commonActions, `echo "Success: Powered OFF"`)
	d := f.open(t, Options{Params: stdParams("stonith_status_sleep", "2")})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, d.Set(ctx, "", fence.StateOff))
	// 10 s, less a quarter: 7.5 s of reads, every 2 s: 3 reads.
	assert.Contains(t, f.read("stdin"), "\npower_timeout=3\n")
	require.NoError(t, d.Set(context.Background(), "", fence.StateOff))
	assert.Contains(t, f.read("stdin"), "\npower_timeout=20\n", "the agent's default when time allows")
}

func TestPlugs(t *testing.T) {
	pdu := append([]param{{name: "plug", required: true, obsoletes: "port"}, {name: "port", required: true, deprecated: true}}, commonParams...)
	ipmi := append([]param{{name: "plug", obsoletes: "port"}, {name: "port", deprecated: true}, {name: "port_as_ip", typ: "boolean"}}, commonParams...)
	body := `plug=$(sed -n 's/^plug=//p' "$dir/stdin"); echo "Status: ON"; echo "Success: Powered $action"`
	ctx := ctxFor(t, time.Minute)

	t.Run("NoPlugs", func(t *testing.T) {
		d := newFake(t, "fence_one", commonParams, commonActions, body).open(t, Options{Params: stdParams()})
		_, err := d.Status(ctx, "")
		require.NoError(t, err)
		_, err = d.Status(ctx, "2")
		assert.ErrorIs(t, err, fence.ErrUnknownPlug)
		assert.True(t, fence.IsNotDone(d.Set(ctx, "2", fence.StateOff)))
	})
	t.Run("PortAsIP", func(t *testing.T) {
		f := newFake(t, "fence_bmc", ipmi, commonActions, body)
		d := f.open(t, Options{Params: stdParams()})
		_, err := d.Status(ctx, "")
		require.NoError(t, err)
		assert.NotContains(t, f.read("stdin"), "plug=")
		_, err = d.Status(ctx, "10.0.0.2")
		assert.ErrorIs(t, err, fence.ErrUnknownPlug)
		d = f.open(t, Options{Params: fence.NewParams("port_as_ip", "1", "username", "u", "password", secret)})
		_, err = d.Status(ctx, "10.0.0.2")
		require.NoError(t, err)
		assert.Contains(t, f.read("stdin"), "port_as_ip=1\n")
		assert.Contains(t, f.read("stdin"), "plug=10.0.0.2\n")
		_, err = d.Status(ctx, "")
		assert.ErrorIs(t, err, fence.ErrUnknownPlug, "with port_as_ip, the plug is the address")
	})
	t.Run("PDU", func(t *testing.T) {
		f := newFake(t, "fence_pdu", pdu, commonActions, body)
		d := f.open(t, Options{Params: stdParams()})
		_, err := d.Status(ctx, "node 3")
		require.NoError(t, err)
		assert.Contains(t, f.read("stdin"), "\nplug=node 3\n")
		require.NoError(t, d.Set(ctx, "4", fence.StateOff))
		for _, bad := range []string{"", "1,2", "1\naction=on"} {
			_, err = d.Status(ctx, bad)
			assert.ErrorIs(t, err, fence.ErrUnknownPlug, "%q", bad)
			assert.True(t, fence.IsNotDone(d.Set(ctx, bad, fence.StateOff)), "%q", bad)
		}
		assert.NoError(t, d.Monitor(ctx), "monitor needs no plug")
	})
}

func TestListAndCycle(t *testing.T) {
	actions := append([]string{"list", "list-status"}, commonActions...)
	pdu := append([]param{{name: "plug", required: true}}, commonParams...)
	body := `case "$action" in
list-status) printf '1,node-1,on\n2,node 2, with comma,off\n3,,UNKNOWN\n\n' ;;
reboot) cat "$dir/reboot.out" 2>/dev/null; cat "$dir/reboot.err" >&2 2>/dev/null; true ;;
esac`
	f := newFake(t, "fence_pdu", pdu, actions, body)
	d := f.open(t, Options{Params: stdParams()})
	ctx := ctxFor(t, time.Minute)
	plugs, err := d.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []fence.Plug{
		{ID: "1", Name: "node-1", State: fence.StateOn},
		{ID: "2", Name: "node 2, with comma", State: fence.StateOff},
		{ID: "3", Name: "", State: fence.StateUnknown},
	}, plugs)
	v := d.View()
	_, ok := v.(fence.Lister)
	assert.True(t, ok)
	_, ok = v.(fence.Cycler)
	assert.True(t, ok)

	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "reboot.out"), []byte("Success: Rebooted\n"), 0o644))
	require.NoError(t, d.Cycle(ctx, "1"))
	assert.Contains(t, f.read("stdin"), "\naction=reboot\nplug=1\n")
	assert.Contains(t, f.read("stdin"), "\nmethod=cycle\n")
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "reboot.err"), []byte("2026-11-22 11:02:47,653 ERROR: Timed out waiting to power ON\n"), 0o644))
	err = d.Cycle(ctx, "1")
	assert.ErrorIs(t, err, fence.ErrTimeout)
	assert.True(t, fence.IsOutcomeUnknown(err))

	g := newFake(t, "fence_garbage", pdu, actions, `echo "just one field"`)
	_, err = g.open(t, Options{Params: stdParams()}).List(ctx)
	assert.ErrorIs(t, err, ErrGarbage)

	// An agent without list nor cycle: the view hides both, the device
	// refuses them.
	h := newFake(t, "fence_plain", commonParams[:5], commonActions[:4], `echo "Status: ON"`)
	hd := h.open(t, Options{Params: fence.NewParams("ip", "h")})
	hv := hd.View()
	_, ok = hv.(fence.Lister)
	assert.False(t, ok)
	_, ok = hv.(fence.Cycler)
	assert.False(t, ok)
	_, ok = hv.(fence.Monitor)
	assert.False(t, ok)
	_, err = hd.List(ctx)
	assert.ErrorIs(t, err, fence.ErrUnsupported)
	assert.True(t, fence.IsNotDone(hd.Cycle(ctx, "")))
	assert.Same(t, hd, Unwrap(hv))
}

func TestLimitSerialises(t *testing.T) {
	body := `if ! mkdir "$dir/lock" 2>/dev/null; then echo "ERROR: overlap" >&2; exit 1; fi
sleep 0.1
rmdir "$dir/lock"
echo "Status: ON"`
	f := newFake(t, "fence_single", commonParams, commonActions, body)
	d := f.open(t, Options{Params: stdParams()})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if _, err := d.Status(ctxFor(t, time.Minute), ""); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 8, f.runs())
}

func TestNotStarted(t *testing.T) {
	f := newFake(t, "fence_gone", commonParams, commonActions, `echo "Status: ON"`)
	d := f.open(t, Options{Params: stdParams()})
	require.NoError(t, os.Remove(f.path))
	err := d.Set(ctxFor(t, time.Minute), "", fence.StateOff)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err), "%v", err)
	assert.Contains(t, err.Error(), "fence_gone")
}

func TestNewRefuses(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	f := newFake(t, "fence_ok", commonParams, commonActions, `echo "Status: ON"`)
	cases := []struct {
		p    fence.Params
		key  string
		want string
	}{
		{stdParams("community", "public"), "community", "fence_ok has no such parameter"},
		{fence.NewParams("username", "u"), "ip", "requires it"},
		{stdParams("ipport", "x"), "ipport", "not an integer"},
		{stdParams("shell_timeout", "soon"), "shell_timeout", ""},
		{stdParams("lanplus", "maybe"), "lanplus", ""},
		{stdParams("username", "a\nb"), "username", "line break"},
		{stdParams("password", "a\n"+secret), "password", "line break"},
		{stdParams("login", "other"), "username", "set twice"},
		{stdParams("power_timeout", "-1"), "power_timeout", ""},
		{stdParams("missing_as_off", "1"), "missing_as_off", "never read off"},
	}
	for _, c := range cases {
		_, err := New(ctx, Options{Path: f.path, Params: c.p})
		require.Error(t, err, "%v", c.p)
		var pe *fence.ParamError
		require.ErrorAs(t, err, &pe, "%v", err)
		assert.Equal(t, c.key, pe.Key)
		assert.Contains(t, err.Error(), c.want)
		assert.ErrorIs(t, err, fence.ErrConfig)
		assert.NotContains(t, err.Error(), secret)
	}
	// Two spellings that agree are one option.
	_, err := New(ctx, Options{Path: f.path, Params: stdParams("login", "admin", "method", "CYCLE")})
	require.NoError(t, err)

	_, err = New(ctx, Options{Path: f.path, Params: stdParams(), Env: []string{"PCMK_service=pacemaker-fenced"}})
	assert.ErrorIs(t, err, fence.ErrConfig)
	_, err = New(ctx, Options{Path: f.path, Params: stdParams(), Env: []string{"novalue"}})
	assert.ErrorIs(t, err, fence.ErrConfig)

	// An agent that is no power device.
	k := newFake(t, "fence_kdumpish", commonParams, []string{"off", "monitor", "metadata"}, "")
	_, err = New(ctx, Options{Path: k.path, Params: stdParams()})
	assert.ErrorIs(t, err, fence.ErrConfig)
	assert.Contains(t, err.Error(), "status")

	// Metadata that is not metadata.
	g := newFake(t, "fence_badmeta", nil, nil, "")
	require.NoError(t, os.WriteFile(filepath.Join(g.dir, "meta.xml"), []byte("Usage: fence_badmeta [options]\n"), 0o644))
	_, err = New(ctx, Options{Path: g.path})
	assert.ErrorIs(t, err, ErrMetadata)
	assert.Contains(t, err.Error(), "fence_badmeta")
}

func TestEnvAdded(t *testing.T) {
	f := newFake(t, "fence_ok", commonParams, commonActions, `echo "Status: ON"`)
	d := f.open(t, Options{Params: stdParams(), Env: []string{"HOME=/nonexistent", "LANG=en_US.UTF-8"}})
	_, err := d.Status(ctxFor(t, time.Minute), "")
	require.NoError(t, err)
	env := f.read("env")
	assert.Contains(t, env, "HOME=/nonexistent\n")
	assert.Contains(t, env, "LANG=en_US.UTF-8\n", "Options.Env wins")
	assert.Contains(t, env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
}

// TestPlugCheck: an agent that lists its plugs and reads any plug off;
// the list is read once, and again for a plug not in it.
func TestPlugCheck(t *testing.T) {
	actions := append([]string{"list"}, commonActions...)
	pdu := append([]param{{name: "plug", required: true}}, commonParams...)
	body := `case "$action" in
list) echo list >> "$dir/lists"; cat "$dir/plugs" ;;
status) echo "Status: OFF"; exit 2 ;;
esac`
	f := newFake(t, "fence_pdu", pdu, actions, body)
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "plugs"), []byte("1,node-1\n2,node-2\n"), 0o644))
	d := f.open(t, Options{Params: stdParams()})
	ctx := ctxFor(t, time.Minute)
	for _, plug := range []string{"1", "node-2", "2", "1"} {
		st, err := d.Status(ctx, plug)
		require.NoError(t, err, plug)
		assert.Equal(t, fence.StateOff, st)
	}
	assert.Equal(t, 1, strings.Count(f.read("lists"), "list"), "one list read")
	st, err := d.Status(ctx, "3")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.Equal(t, fence.StateUnknown, st)
	assert.Equal(t, 2, strings.Count(f.read("lists"), "list"), "read again for a plug not in it")
	// A plug added to the device is found on the next read.
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "plugs"), []byte("1,node-1\n2,node-2\n3,node-3\n"), 0o644))
	st, err = d.Status(ctx, "3")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	// A failed list is no off.
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "plugs"), []byte("garbage\n"), 0o644))
	_, err = d.Status(ctx, "4")
	assert.ErrorIs(t, err, ErrGarbage)
	// Turned off, the agent's word stands.
	st, err = f.open(t, Options{Params: stdParams(), NoPlugCheck: true}).Status(ctx, "4")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
}
