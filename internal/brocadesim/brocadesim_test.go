package brocadesim_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
	"github.com/fencekit/fencekit/internal/brocadesim/fos"
)

// dial logs in to the switch with x/crypto/ssh, verifying its host key
// with its known_hosts file.
func dial(t *testing.T, sw *brocadesim.Switch, auth ssh.AuthMethod) *ssh.Client {
	t.Helper()
	cb, err := knownhosts.New(sw.KnownHosts)
	require.NoError(t, err)
	c, err := ssh.Dial("tcp", sw.Addr(), &ssh.ClientConfig{User: sw.User, Auth: []ssh.AuthMethod{auth}, HostKeyCallback: cb, Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func run(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	s, err := c.NewSession()
	require.NoError(t, err)
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	require.NoError(t, err, "%s: %s", cmd, out)
	return string(out)
}

func keyAuth(t *testing.T, sw *brocadesim.Switch) ssh.AuthMethod {
	b, err := os.ReadFile(sw.ClientKey)
	require.NoError(t, err)
	signer, err := ssh.ParsePrivateKey(b)
	require.NoError(t, err)
	return ssh.PublicKeys(signer)
}

func TestSwitchExec(t *testing.T) {
	sw := brocadesim.Start(t, brocadesim.Options{Ports: 8, Disabled: []int{5}})
	for name, auth := range map[string]ssh.AuthMethod{"password": ssh.Password(sw.Password), "key": keyAuth(t, sw)} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, sw, auth)
			out := run(t, c, "switchshow")
			assert.Contains(t, out, "Index Port Address")
			assert.Contains(t, out, "    5    5   010500   id    N16   No_Light    FC  Disabled (Persistent)\n")
			assert.Contains(t, out, "    4    4   010400   id    N16   Online      FC  F-Port  10:00:00:00:c9:00:00:04\n")

			require.NoError(t, sw.SetTruth("3", fence.StateOn))
			assert.Empty(t, run(t, c, "portCfgPersistentDisable 3"))
			st, err := sw.Truth("3")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOff, st)
			assert.Contains(t, run(t, c, "portshow 3"), "portFlags: 0x4001\tPRESENT U_PORT DISABLED LED PERSISTENT_DISABLE\n")
			assert.Empty(t, run(t, c, "PORTCFGPERSISTENTENABLE 3"))
			st, err = sw.Truth("3")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOn, st)
		})
	}
	cmds, err := sw.Commands()
	require.NoError(t, err)
	assert.Contains(t, cmds, "portCfgPersistentDisable 3")
	assert.GreaterOrEqual(t, sw.Logins(), 2)

	// A bad command, a bad port.
	c := dial(t, sw, ssh.Password(sw.Password))
	s, err := c.NewSession()
	require.NoError(t, err)
	out, err := s.CombinedOutput("bogus")
	var ee *ssh.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 127, ee.ExitStatus())
	assert.Equal(t, "rbash: bogus: command not found\n", string(out))
	s, err = c.NewSession()
	require.NoError(t, err)
	out, _ = s.CombinedOutput("portcfgpersistentdisable 8")
	assert.Equal(t, "Invalid port number 8\n", string(out))
}

func TestSwitchRefusesStrangers(t *testing.T) {
	sw := brocadesim.Start(t, brocadesim.Options{Ports: 2})
	cb, err := knownhosts.New(sw.KnownHosts)
	require.NoError(t, err)
	_, err = ssh.Dial("tcp", sw.Addr(), &ssh.ClientConfig{User: sw.User, Auth: []ssh.AuthMethod{ssh.Password("wrong")}, HostKeyCallback: cb, Timeout: 10 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unable to authenticate")
	_, err = ssh.Dial("tcp", sw.Addr(), &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.Password(sw.Password)}, HostKeyCallback: cb, Timeout: 10 * time.Second})
	require.Error(t, err)
}

// The interactive shell, on a pseudo-terminal, as the agent uses it.
func TestSwitchShell(t *testing.T) {
	sw := brocadesim.Start(t, brocadesim.Options{Ports: 4, Name: "edge1", Banner: "Notice> authorised use only"})
	c := dial(t, sw, ssh.Password(sw.Password))
	s, err := c.NewSession()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.RequestPty("dumb", 40, 200, ssh.TerminalModes{ssh.ECHO: 0}))
	var out safeBuffer
	s.Stdout = &out
	in, err := s.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, s.Shell())
	prompt := "edge1:FID128:" + brocadesim.User + "> "
	require.Eventually(t, func() bool { return strings.HasSuffix(out.String(), prompt) }, 10*time.Second, 5*time.Millisecond, "%q", out.String())
	assert.True(t, strings.HasPrefix(out.String(), "Notice> authorised use only\r\n"), "%q", out.String())
	_, err = in.Write([]byte("portcfgpersistentdisable 2\nswitchshow\nexit\n"))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the shell did not end after exit")
	}
	assert.Contains(t, out.String(), "    2    2   010200   id    N16   No_Light    FC  Disabled (Persistent)\r\n")
	assert.Equal(t, 3, strings.Count(out.String(), prompt))
	st, err := sw.Truth("2")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
}

func TestSwitchFaultsAndDirector(t *testing.T) {
	sw := brocadesim.Start(t, brocadesim.Options{Ports: 40, Director: true})
	c := dial(t, sw, ssh.Password(sw.Password))
	out := run(t, c, "switchshow")
	assert.Contains(t, out, "Index Slot Port Address")
	assert.Contains(t, out, "   33    3    1   012100   id    N16   Online")
	assert.Empty(t, run(t, c, "portcfgpersistentdisable 3/1"))
	st, err := sw.Truth("33")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	st, err = sw.Truth("3/1")
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st)
	_, err = sw.Truth("3/16")
	assert.ErrorIs(t, err, fence.ErrUnknownPlug)

	require.NoError(t, sw.SetFault(fos.Garbage))
	assert.NotContains(t, run(t, c, "switchshow"), "Index")
	require.NoError(t, sw.SetFault(fos.Refuse))
	s, err := c.NewSession()
	require.NoError(t, err)
	b, _ := s.CombinedOutput("portcfgpersistentenable 3/1")
	assert.Equal(t, "RBAC permission denied.\n", string(b))
	require.NoError(t, sw.SetFault(fos.NoFault))
	st, _ = sw.Truth("33")
	assert.Equal(t, fence.StateOff, st, "a refused command changes nothing")
}

// OpenSSH's own client logs in with the key and the known_hosts file.
func TestSwitchWithOpenSSHClient(t *testing.T) {
	sshBin := brocadesim.Require(t, "ssh", "openssh-client")
	sw := brocadesim.Start(t, brocadesim.Options{Ports: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile="+sw.KnownHosts,
		"-o", "StrictHostKeyChecking=yes", "-i", sw.ClientKey, "-p", strconv.Itoa(sw.Port), sw.User+"@"+brocadesim.Host, "portshow 1").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "portState: 1\tOnline")
}

func TestStopEndsSessions(t *testing.T) {
	sw := brocadesim.Start(t, brocadesim.Options{Ports: 2})
	c := dial(t, sw, ssh.Password(sw.Password))
	s, err := c.NewSession()
	require.NoError(t, err)
	require.NoError(t, s.RequestPty("dumb", 40, 80, ssh.TerminalModes{}))
	require.NoError(t, s.Shell())
	require.NoError(t, sw.SetFault(fos.Hang))
	sw.Stop()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection outlived Stop")
	}
}

// safeBuffer is a bytes.Buffer for one writer and one reader.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Serve: the same switch in this process, without sshd or root.
func TestServe(t *testing.T) {
	sw, err := brocadesim.Serve(brocadesim.Options{Ports: 4, Disabled: []int{1}})
	require.NoError(t, err)
	defer sw.Stop()
	for name, auth := range map[string]ssh.AuthMethod{"password": ssh.Password(sw.Password), "key": keyAuth(t, sw)} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, sw, auth)
			assert.Contains(t, run(t, c, "switchshow"), "    1    1   010100   id    N16   No_Light    FC  Disabled (Persistent)\n")
			assert.Empty(t, run(t, c, "portcfgpersistentdisable 2"))
			st, err := sw.Truth("2")
			require.NoError(t, err)
			assert.Equal(t, fence.StateOff, st)
			require.NoError(t, sw.SetTruth("2", fence.StateOn))
		})
	}
	assert.Equal(t, 2, sw.Logins())
	cb, err := knownhosts.New(sw.KnownHosts)
	require.NoError(t, err)
	_, err = ssh.Dial("tcp", sw.Addr(), &ssh.ClientConfig{User: sw.User, Auth: []ssh.AuthMethod{ssh.Password("nope")}, HostKeyCallback: cb, Timeout: 5 * time.Second})
	require.Error(t, err)

	// The shell on a pseudo-terminal.
	c := dial(t, sw, ssh.Password(sw.Password))
	s, err := c.NewSession()
	require.NoError(t, err)
	require.NoError(t, s.RequestPty("dumb", 40, 200, ssh.TerminalModes{ssh.ECHO: 0}))
	var out safeBuffer
	s.Stdout = &out
	in, err := s.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, s.Shell())
	_, err = in.Write([]byte("portshow 1\nexit\n"))
	require.NoError(t, err)
	require.NoError(t, s.Wait())
	assert.Contains(t, out.String(), "portDisableReason: Persistently disabled\r\n")
	assert.Equal(t, 2, strings.Count(out.String(), "fcsim:FID128:"+brocadesim.User+"> "))
}
