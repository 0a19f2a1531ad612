package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
)

// These tests run the real fence_apc_snmp through the adapter against an
// APC Master Switch simulated by Net-SNMP's snmpd on 127.0.0.1: a "pass"
// script serves the PowerNet MIB's sPDUOutletCtl (.1.3.6.1.4.1.318.1.1.4.4.
// 2.1.3.N: 1 on, 2 off, read and set) and sPDUOutletCtlName (...4.N) for N
// outlets, each state in a file. snmpd's own sysObjectID is no APC one, so
// fence_apc_snmp takes it for a Master Switch, its fallback.

// apcScript is the pass script: apc.sh -g OID | -n OID | -s OID TYPE VALUE.
const apcScript = `#!/bin/sh
dir=%q
n=%d
base=.1.3.6.1.4.1.318.1.1.4.4.2.1
list() {
	i=1; while [ $i -le $n ]; do echo "$base.3.$i"; i=$((i+1)); done
	i=1; while [ $i -le $n ]; do echo "$base.4.$i"; i=$((i+1)); done
}
gt() {
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, A, "."); m = split(b, B, ".")
		for (i = 2; i <= n && i <= m; i++) { if (A[i]+0 > B[i]+0) exit 0; if (A[i]+0 < B[i]+0) exit 1 }
		exit (n > m) ? 0 : 1 }'
}
value() {
	case "$1" in
	$base.3.*) i=${1##*.}; [ -f "$dir/outlet.$i" ] || return 1; echo "$1"; echo integer; cat "$dir/outlet.$i" ;;
	$base.4.*) i=${1##*.}; [ -f "$dir/outlet.$i" ] || return 1; echo "$1"; echo string; echo "node-$i" ;;
	*) return 1 ;;
	esac
}
req="$2"
case "$req" in .*) ;; *) req=".$req" ;; esac
case "$1" in
-g) value "$req" ;;
-n) for o in $(list); do if gt "$o" "$req"; then value "$o"; exit 0; fi; done ;;
-s)
	case "$req" in
	$base.3.*)
		i=${req##*.}
		if [ ! -f "$dir/outlet.$i" ]; then echo not-writable; exit 0; fi
		if [ "$3" != integer ]; then echo wrong-type; exit 0; fi
		case "$4" in
		1|2) echo "$4" > "$dir/outlet.$i.new"; mv "$dir/outlet.$i.new" "$dir/outlet.$i" ;;
		*) echo wrong-value ;;
		esac ;;
	*) echo not-writable ;;
	esac ;;
esac
`

// apcSim is a running snmpd serving the simulated switch.
type apcSim struct {
	dir       string
	port      int
	community string
	cmd       *exec.Cmd
	exited    chan struct{}
	once      sync.Once
}

// startAPC starts snmpd with n outlets, all on, and stops it when t ends.
func startAPC(t testing.TB, n int) *apcSim {
	t.Helper()
	snmpd := requireTool(t, "snmpd", "snmpd")
	snmpget := requireTool(t, "snmpget", "snmp")
	requireAgent(t, "fence_apc_snmp")
	dir := t.TempDir()
	if strings.ContainsAny(dir, " \t\n\"'") {
		t.Fatalf("temporary directory %q has white space or quotes", dir)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apc.sh"), []byte(fmt.Sprintf(apcScript, dir, n)), 0o755))
	for i := 1; i <= n; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("outlet.%d", i)), []byte("1\n"), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "persist"), 0o755))
	var errs []string
	for try := 0; try < 3; try++ {
		s, err := tryStartAPC(snmpd, snmpget, dir)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		errs = append(errs, err.Error())
	}
	t.Fatalf("snmpd did not start: %s", strings.Join(errs, "; "))
	return nil
}

func tryStartAPC(snmpd, snmpget, dir string) (*apcSim, error) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	s := &apcSim{dir: dir, port: port, community: "c0mm-" + secret, exited: make(chan struct{})}
	conf := fmt.Sprintf("agentaddress udp:127.0.0.1:%d\nrwcommunity %s 127.0.0.1\npass .1.3.6.1.4.1.318 /bin/sh %s/apc.sh\n", port, s.community, dir)
	if err := os.WriteFile(filepath.Join(dir, "snmpd.conf"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(snmpd, "-f", "-C", "-c", filepath.Join(dir, "snmpd.conf"), "-Lf", filepath.Join(dir, "snmpd.log"),
		"-p", filepath.Join(dir, "snmpd.pid"), "-m", "")
	s.cmd.Env = []string{"SNMP_PERSISTENT_DIR=" + filepath.Join(dir, "persist"), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "snmpd.log"))
			return nil, fmt.Errorf("port %d: snmpd exited: %s", port, strings.TrimSpace(string(log)))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		out, err := exec.CommandContext(ctx, snmpget, "-m", "", "-Oeqn", "-v2c", "-c", s.community, "-t", "0.3", "-r", "0",
			fmt.Sprintf("127.0.0.1:%d", port), ".1.3.6.1.4.1.318.1.1.4.4.2.1.4.1").Output()
		cancel()
		if err == nil && strings.Contains(string(out), `"node-1"`) {
			return s, nil
		}
		time.Sleep(time.Duration(min(i+1, 10)) * 20 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("port %d: snmpd did not answer within 10s", port)
}

func (s *apcSim) stop() {
	s.once.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	})
}

// truth reads an outlet's state file.
func (s *apcSim) truth(plug string) (fence.State, error) {
	if _, err := strconv.Atoi(plug); err != nil {
		return fence.StateUnknown, fmt.Errorf("no outlet %q", plug)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "outlet."+plug))
	if err != nil {
		return fence.StateUnknown, err
	}
	switch strings.TrimSpace(string(b)) {
	case "1":
		return fence.StateOn, nil
	case "2":
		return fence.StateOff, nil
	}
	return fence.StateUnknown, fmt.Errorf("outlet %s holds %q", plug, b)
}

func (s *apcSim) params(kv ...string) fence.Params {
	return fence.NewParams(append([]string{"ip", "127.0.0.1", "ipport", strconv.Itoa(s.port),
		"community", s.community, "snmp_version", "2c"}, kv...)...)
}

func TestConformanceAPCSNMP(t *testing.T) {
	s := startAPC(t, 4)
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_apc_snmp", Params: s.params()})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return &fencetest.Fixture{
			Device:      d.View(),
			Plugs:       []string{"1", "2"}, // two: each run costs several snmp commands
			MissingPlug: "nosuch",
			Truth:       func(_ context.Context, plug string) (fence.State, error) { return s.truth(plug) },
			Settle:      200 * time.Millisecond,
		}
	})
}

func TestAPCSNMP(t *testing.T) {
	s := startAPC(t, 4)
	d, err := New(ctxFor(t, time.Minute), Options{Path: "fence_apc_snmp", Params: s.params()})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	ctx := ctxFor(t, 2*time.Minute)

	plugs, err := d.List(ctx)
	require.NoError(t, err)
	require.Len(t, plugs, 4)
	assert.Equal(t, fence.Plug{ID: "2", Name: "node-2", State: fence.StateUnknown}, plugs[1])

	// Through the registry and the engine, as a configuration would.
	m, err := fence.DefaultRegistry().Open(ctx, "", &fence.MethodOptions{Node: "worker-3", Name: "pdu-a", Driver: "agent", Params: s.params("agent", "fence_apc_snmp", "plug", "3", "io_timeout", "30", "stonith_status_sleep", "0.05")})
	require.NoError(t, err)
	t.Cleanup(func() { Unwrap(m.Device).Close() })
	res, err := fence.Do(ctx, m, fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	st, _ := s.truth("3")
	assert.Equal(t, fence.StateOff, st)
	for _, other := range []string{"1", "2", "4"} {
		st, _ := s.truth(other)
		assert.Equal(t, fence.StateOn, st, "outlet %s", other)
	}

	// An outlet by its name: the agent looks it up.
	err = d.Set(ctx, "node-4", fence.StateOff)
	require.NoError(t, err)
	st, _ = s.truth("4")
	assert.Equal(t, fence.StateOff, st)

	// The community is a secret: an error never shows it.
	err = d.Set(ctx, "nosuch", fence.StateOff)
	require.Error(t, err)
	t.Logf("unknown outlet: %v", err)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	assert.True(t, fence.IsNotDone(err))
	assert.NotContains(t, err.Error(), s.community)

	wrong, err := New(ctx, Options{Path: "fence_apc_snmp", Params: s.params("community", "wr0ng-"+secret)})
	require.NoError(t, err)
	t.Cleanup(func() { wrong.Close() })
	c2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = wrong.Status(c2, "1")
	require.Error(t, err)
	t.Logf("wrong community: %v", err)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.NotContains(t, err.Error(), secret)
}

// TestAPCSNMPMissingOutletNumber: fence_apc_snmp reads an outlet number
// the switch lacks as off; the adapter checks the plug list and fails.
func TestAPCSNMPMissingOutletNumber(t *testing.T) {
	s := startAPC(t, 4)
	ctx := ctxFor(t, 2*time.Minute)
	d, err := New(ctx, Options{Path: "fence_apc_snmp", Params: s.params()})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	st, err := d.Status(ctx, "99")
	require.Error(t, err)
	t.Logf("outlet 99: %v", err)
	assert.Equal(t, fence.StateUnknown, st)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)

	m := &fence.Method{Name: "pdu", Node: "worker-9", Driver: "agent", Device: d.View(), Plug: "99"}
	res, err := fence.Do(ctx, m, fence.ActionOff)
	require.Error(t, err)
	assert.False(t, res.Fenced(), "a missing outlet is no fenced node")

	// Outlets the list holds, by number and by name, read off as they are.
	require.NoError(t, d.Set(ctx, "2", fence.StateOff))
	st, err = d.Status(ctx, "2")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	st, err = d.Status(ctx, "node-2")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)

	// Without the check, the agent's word stands: the hazard it guards.
	unchecked, err := New(ctx, Options{Path: "fence_apc_snmp", Params: s.params(), NoPlugCheck: true})
	require.NoError(t, err)
	t.Cleanup(func() { unchecked.Close() })
	st, err = unchecked.Status(ctx, "99")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "fence_apc_snmp reads a missing outlet as off")
}
