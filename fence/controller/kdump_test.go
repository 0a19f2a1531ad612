package controller_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/flow"
	"github.com/fencekit/fencekit/fence/kdump"
)

// kdumpSender returns the real fence_kdump_send, or skips (fails with
// CI=true) when it is missing.
func kdumpSender(t *testing.T) string {
	for _, p := range []string{os.Getenv("FENCE_KDUMP_SEND"), "/usr/libexec/fence-agents/fence_kdump_send"} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("fence_kdump_send"); err == nil {
		return p
	}
	msg := "fence_kdump_send is missing: install the Debian package fence-agents"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// The controller with the kdump listener and the real fence_kdump_send of
// the fence agents, in real time: a node that sends kdump messages is
// isolated but not power-cycled; once its messages stop (the dump is over),
// power management runs.
func TestKdumpRealSenderHoldsPower(t *testing.T) {
	bin := kdumpSender(t)
	f := newFixtureWith(t, 1, true)
	book := &kdump.AddressBook{}
	require.NoError(t, book.Set("node-1", netip.MustParseAddr("127.0.0.1")))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := kdump.Listen(ctx, "127.0.0.1:0", kdump.Options{Resolve: book.Resolve, Stale: 1500 * time.Millisecond})
	require.NoError(t, err)
	defer l.Close()

	c := f.controller(nil)
	c.Kdump = l
	c.Now = time.Now
	c.Options.Flow.PowerDelay = 10 * time.Millisecond
	f.health.set("node-1", false, time.Now().Add(-time.Hour))

	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	sctx, stop := context.WithCancel(ctx)
	sender := exec.CommandContext(sctx, bin, "-c", "0", "-i", "1", "-p", port, "127.0.0.1")
	sender.WaitDelay = 5 * time.Second
	require.NoError(t, sender.Start())
	defer func() { stop(); _ = sender.Wait() }()
	require.Eventually(t, func() bool { d, _ := l.Dumping("node-1", time.Now()); return d }, 5*time.Second, 20*time.Millisecond)

	pass(t, c)
	require.True(t, f.record("node-1").Isolated, "isolation proceeds during the dump")
	time.Sleep(20 * time.Millisecond) // the power delay
	pass(t, c)
	r := f.record("node-1")
	assert.Equal(t, fence.StepPowerManagement, r.Step)
	assert.Equal(t, flow.StatusNew, r.Status)
	assert.Contains(t, r.Message, "kdump")
	assert.Equal(t, 0, f.pdu.Calls(fake.OpSet), "not power-cycled while dumping")

	stop() // the dump ends: the node reboots and sends no more
	_ = sender.Wait()
	require.Eventually(t, func() bool {
		pass(t, c)
		return f.record("node-1").PoweredOff
	}, 10*time.Second, 100*time.Millisecond)
	assert.Equal(t, 1, sets(f.pdu, "1", fence.StateOff))
}
