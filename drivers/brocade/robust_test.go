package brocade

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/brocadesim"
	"github.com/fencekit/fencekit/internal/brocadesim/fos"
)

// secretIn asserts that an error says nothing of the password.
func noSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range append(secrets, brocadesim.Password) {
		assert.NotContains(t, err.Error(), s)
	}
}

// namesDevice asserts that an error names the switch and the step.
func namesDevice(t *testing.T, err error, sw *brocadesim.Switch, op string) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, sw.Addr(), e.Addr)
	assert.Equal(t, op, e.Op)
	assert.Contains(t, err.Error(), "brocade ssh "+sw.Addr()+": "+op+": ")
}

// within runs f and asserts that it returns within d.
func within(t *testing.T, d time.Duration, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	took := time.Since(start)
	assert.Less(t, took, d, "took %v", took)
	return took
}

// One connection serves every call; the commands are the agent's.
func TestOneConnectionAgentCommands(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 8})
	d := openDevice(t, passwordOptions(sw))
	for i := 0; i < 3; i++ {
		res, err := fence.Do(ctx(t), method(d, "5"), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, off, truth(t, sw, "5"))
		_, err = fence.Do(ctx(t), method(d, "5"), fence.ActionOn)
		require.NoError(t, err)
		assert.Equal(t, on, truth(t, sw, "5"))
	}
	plugs, err := d.List(ctx(t))
	require.NoError(t, err)
	require.Len(t, plugs, 8)
	assert.Equal(t, fence.Plug{ID: "7", State: on}, plugs[7])
	require.NoError(t, d.Monitor(ctx(t)))
	assert.Equal(t, 1, d.Logins())
	assert.Equal(t, 1, sw.Logins())
	cmds, err := sw.Commands()
	require.NoError(t, err)
	assert.Equal(t, []string{"switchshow", "portCfgPersistentDisable 5", "switchshow", "switchshow", "portCfgPersistentEnable 5", "switchshow"}, cmds[:6])
	require.NoError(t, d.Close())
	_, err = d.Status(ctx(t), "5")
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, fence.IsNotDone(d.Set(ctx(t), "5", off)))
}

// A banner before authentication and before the prompt, prompt-like
// lines in it, and odd white space everywhere: the same states.
func TestBannerAndWhitespace(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 12, Banner: oddBanner, SSHBanner: "*** sw0:admin> ***\n", OddWhitespace: true, Disabled: []int{2, 9}})
	for _, mode := range []Mode{ModeShell, ModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			o := passwordOptions(sw)
			o.Mode = mode
			d := openDevice(t, o)
			plugs, err := d.List(ctx(t))
			require.NoError(t, err)
			require.Len(t, plugs, 12)
			for i, p := range plugs {
				want := on
				if i == 2 || i == 9 {
					want = off
				}
				assert.Equal(t, fmt.Sprint(i), p.ID)
				assert.Equal(t, want, p.State, "port %d", i)
			}
			st, err := d.Status(ctx(t), "9")
			require.NoError(t, err)
			assert.Equal(t, off, st)
			require.NoError(t, d.Set(ctx(t), "9", on))
			assert.Equal(t, on, truth(t, sw, "9"))
			require.NoError(t, d.Set(ctx(t), "9", off))
		})
	}
	// The prompt of the agents' command_prompt option works too.
	o := passwordOptions(sw)
	o.Prompt = "> "
	o.Mode = ModeShell
	// "> " also matches the banner's lines; the prompt is still learned
	// by seeing it twice.
	d := openDevice(t, o)
	st, err := d.Status(ctx(t), "2")
	require.NoError(t, err)
	assert.Equal(t, off, st)
}

// A terminal that echoes the commands: the echo is not output.
func TestEcho(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4, Echo: true, OddWhitespace: true})
	d := openDevice(t, passwordOptions(sw))
	res, err := fence.Do(ctx(t), method(d, "2"), fence.ActionOff)
	require.NoError(t, err)
	assert.True(t, res.Fenced())
	assert.Equal(t, off, truth(t, sw, "2"))
	require.NoError(t, d.Set(ctx(t), "2", on), "the echo of a port command is not a reply")
	assert.Equal(t, on, truth(t, sw, "2"))
}

// A switch that answers garbage, or not at all: a clear error within the
// command timeout, never a success, never the password.
func TestBadReplies(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	const timeout = 1500 * time.Millisecond
	for _, mode := range []Mode{ModeShell, ModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			o := passwordOptions(sw)
			o.Mode = mode
			o.CommandTimeout = timeout
			d := openDevice(t, o)
			require.NoError(t, sw.SetTruth("1", on))
			_, err := d.Status(ctx(t), "1") // logged in, the port table read
			require.NoError(t, err)

			for _, f := range []fos.Fault{fos.Garbage, fos.Truncated} {
				require.NoError(t, sw.SetFault(f))
				var st fence.State
				within(t, timeout, func() { st, err = d.Status(ctx(t), "1") })
				require.Error(t, err, f)
				assert.Equal(t, unknown, st)
				assert.ErrorIs(t, err, ErrMalformed, f)
				namesDevice(t, err, sw, "switchshow")
				noSecret(t, err)

				// A verified off fails, and says why.
				res, err := fence.Do(ctx(t), method(d, "1"), fence.ActionOff)
				require.Error(t, err, f)
				assert.False(t, res.Fenced())
				assert.True(t, fence.IsNotDone(err), "the first status failed: nothing was sent")
				require.NoError(t, sw.SetFault(fos.NoFault))
			}

			// Garbage in answer to a port command: the outcome is unknown.
			require.NoError(t, sw.SetFault(fos.Garbage))
			err = d.Set(ctx(t), "1", off)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrUnexpectedReply)
			assert.True(t, fence.IsOutcomeUnknown(err))
			namesDevice(t, err, sw, "portCfgPersistentDisable 1")
			require.NoError(t, sw.SetFault(fos.NoFault))

			// No prompt, or no answer at all: a timeout.
			for _, f := range []fos.Fault{fos.NoPrompt, fos.Hang} {
				require.NoError(t, sw.SetFault(f))
				var st fence.State
				took := within(t, timeout+3*time.Second, func() { st, err = d.Status(ctx(t), "1") })
				assert.GreaterOrEqual(t, took, timeout-100*time.Millisecond)
				require.Error(t, err, f)
				assert.Equal(t, unknown, st)
				assert.ErrorIs(t, err, ErrCommandTimeout, f)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.True(t, e.Timeout())
				namesDevice(t, err, sw, "switchshow")

				err = d.Set(ctx(t), "1", off)
				require.Error(t, err)
				assert.True(t, fence.IsOutcomeUnknown(err), "a port command sent and not answered: %v", err)
				require.NoError(t, sw.SetFault(fos.NoFault))
				// The next call logs in again and works.
				_, err = d.Status(ctx(t), "1")
				require.NoError(t, err)
			}

			// A refused command: not done, the port untouched.
			require.NoError(t, sw.SetTruth("1", on))
			require.NoError(t, sw.SetFault(fos.Refuse))
			err = d.Set(ctx(t), "1", off)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrRefused)
			assert.True(t, fence.IsNotDone(err))
			assert.Contains(t, err.Error(), "RBAC permission denied.")
			assert.Equal(t, on, truth(t, sw, "1"))

			// Chatter after a port command that worked: unknown outcome,
			// and the engine verifies it.
			require.NoError(t, sw.SetFault(fos.Chatty))
			err = d.Set(ctx(t), "1", off)
			assert.ErrorIs(t, err, ErrUnexpectedReply)
			res, err := fence.Do(ctx(t), method(d, "1"), fence.ActionOn)
			require.NoError(t, err, "verified by the status that follows")
			assert.Equal(t, on, res.State)

			// Port lines without their state: portshow decides; List
			// reports unknown.
			require.NoError(t, sw.SetFault(fos.ShortLines))
			require.NoError(t, sw.SetTruth("2", off))
			st, err := d.Status(ctx(t), "2")
			require.NoError(t, err)
			assert.Equal(t, off, st)
			st, err = d.Status(ctx(t), "3")
			require.NoError(t, err)
			assert.Equal(t, on, st)
			plugs, err := d.List(ctx(t))
			require.NoError(t, err)
			for _, p := range plugs {
				assert.Equal(t, unknown, p.State)
			}
			require.NoError(t, sw.SetFault(fos.NoFault))
			require.NoError(t, sw.SetTruth("2", on))
		})
	}
}

// The session or connection ends under the device: the next call logs in
// again, and a read is tried again at once.
func TestReconnect(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	for _, mode := range []Mode{ModeShell, ModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			o := passwordOptions(sw)
			o.Mode = mode
			d := openDevice(t, o)
			_, err := d.Status(ctx(t), "1")
			require.NoError(t, err)
			sw.DropConnections()
			st, err := d.Status(ctx(t), "1")
			require.NoError(t, err)
			assert.Equal(t, on, st)
			assert.Equal(t, 2, d.Logins())
			sw.DropConnections()
			require.NoError(t, d.Set(ctx(t), "1", off))
			assert.Equal(t, off, truth(t, sw, "1"))
			require.NoError(t, d.Set(ctx(t), "1", on))
			assert.Equal(t, 3, d.Logins())

			// The switch ends the CLI session (as on its idle timeout).
			require.NoError(t, sw.SetFault(fos.Drop))
			_, err = d.Status(ctx(t), "1")
			require.Error(t, err)
			require.NoError(t, sw.SetFault(fos.NoFault))
			_, err = d.Status(ctx(t), "1")
			require.NoError(t, err)
		})
	}
}

// A call whose context ends while the switch does not answer returns at
// once; a port command not yet sent is not done.
func TestContextEndsMidCommand(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	d := openDevice(t, passwordOptions(sw))
	_, err := d.Status(ctx(t), "0")
	require.NoError(t, err)
	require.NoError(t, sw.SetFault(fos.Hang))
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	within(t, 3*time.Second, func() { _, err = d.Status(c, "0") })
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	namesDevice(t, err, sw, "switchshow")
	require.NoError(t, sw.SetFault(fos.NoFault))

	// Calls waiting for their turn give up with their context.
	require.NoError(t, sw.SetFault(fos.Hang))
	done := make(chan error, 1)
	go func() {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := d.Status(c, "0")
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	c2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	err = d.Set(c2, "0", off)
	require.Error(t, err)
	assert.True(t, fence.IsNotDone(err), "never sent: %v", err)
	require.Error(t, <-done)
	require.NoError(t, sw.SetFault(fos.NoFault))
	assert.Equal(t, on, truth(t, sw, "0"))
	_, err = d.Status(ctx(t), "0")
	require.NoError(t, err)
}

// Unknown, changed and pinned host keys.
func TestHostKey(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	other := start(t, brocadesim.Options{Ports: 4})
	const timeout = 5 * time.Second

	check := func(t *testing.T, o Options, want string) {
		t.Helper()
		d := openDevice(t, o)
		var err error
		within(t, timeout, func() { _, err = d.Status(ctx(t), "1") })
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrHostKey)
		assert.ErrorIs(t, err, fence.ErrLoginDenied)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "ssh-ed25519 "+sw.Fingerprint, "the key presented")
		namesDevice(t, err, sw, "login")
		noSecret(t, err)
		err = d.Set(ctx(t), "1", off)
		assert.True(t, fence.IsNotDone(err))
		assert.Equal(t, on, truth(t, sw, "1"))
	}

	t.Run("unknown", func(t *testing.T) {
		o := passwordOptions(sw)
		o.KnownHostsFiles = []string{other.KnownHosts} // another port's key only
		check(t, o, "is not in the known_hosts files")
	})
	t.Run("changed", func(t *testing.T) {
		// The known_hosts file says this switch has the other's key.
		kh := filepath.Join(t.TempDir(), "known_hosts")
		line := fmt.Sprintf("[%s]:%d %s", brocadesim.Host, sw.Port, ssh.MarshalAuthorizedKey(other.HostKey))
		require.NoError(t, os.WriteFile(kh, []byte(line), 0o600))
		o := passwordOptions(sw)
		o.KnownHostsFiles = []string{kh}
		check(t, o, "someone is posing as it")
	})
	t.Run("wrong fingerprint", func(t *testing.T) {
		o := passwordOptions(sw)
		o.KnownHostsFiles = nil
		o.HostKeyFingerprints = []string{other.Fingerprint}
		check(t, o, "matches no pinned host_key_fingerprint")
	})
	t.Run("pinned", func(t *testing.T) {
		for _, pin := range []string{sw.Fingerprint, "ssh-ed25519 " + sw.Fingerprint, other.Fingerprint + ", " + sw.Fingerprint, "MD5:" + ssh.FingerprintLegacyMD5(sw.HostKey)} {
			o := passwordOptions(sw)
			o.KnownHostsFiles = nil
			o.HostKeyFingerprints = []string{pin}
			d := openDevice(t, o)
			_, err := d.Status(ctx(t), "1")
			require.NoError(t, err, pin)
		}
	})
	t.Run("insecure", func(t *testing.T) {
		o := passwordOptions(sw)
		o.KnownHostsFiles = nil
		o.InsecureIgnoreHostKey = true
		d := openDevice(t, o)
		_, err := d.Status(ctx(t), "1")
		require.NoError(t, err)
	})
	// No credential was offered to a switch whose key was refused.
	log, err := os.ReadFile(filepath.Join(sw.Dir, "sshd.log"))
	require.NoError(t, err)
	assert.NotContains(t, string(log), "Failed password")
}

// Wrong credentials: login denied, quickly, naming the user and the
// methods, never the password.
func TestLoginDenied(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	const wrong = "not-the-Pass-0815"
	stranger := filepath.Join(t.TempDir(), "stranger_key")
	writeKey(t, stranger, "")
	for name, mod := range map[string]func(*Options){
		"password": func(o *Options) { o.Password = fence.NewSecret(wrong) },
		"user":     func(o *Options) { o.Username = "admin" },
		"key":      func(o *Options) { o.Password = fence.NewSecret(""); o.IdentityFile = stranger },
	} {
		t.Run(name, func(t *testing.T) {
			o := passwordOptions(sw)
			o.LoginTimeout = 5 * time.Second
			mod(&o)
			d := openDevice(t, o)
			var err error
			within(t, o.LoginTimeout, func() { _, err = d.Status(ctx(t), "1") })
			require.Error(t, err)
			assert.ErrorIs(t, err, fence.ErrLoginDenied)
			assert.NotErrorIs(t, err, ErrHostKey)
			namesDevice(t, err, sw, "login")
			assert.Contains(t, err.Error(), fmt.Sprintf("user %q", o.Username))
			noSecret(t, err, wrong)
			err = d.Set(ctx(t), "1", off)
			assert.True(t, fence.IsNotDone(err))
			res, err := fence.Do(ctx(t), method(d, "1"), fence.ActionOff)
			require.Error(t, err)
			assert.False(t, res.Fenced())
			assert.True(t, fence.IsNotDone(err))
			noSecret(t, err, wrong)
		})
	}
	assert.Equal(t, on, truth(t, sw, "1"))
}

// An encrypted key, its passphrase given as the password.
func TestEncryptedKey(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	const passphrase = "key-Phrase-4242"
	key := filepath.Join(t.TempDir(), "enc_key")
	pub := writeKey(t, key, passphrase)
	f, err := os.OpenFile(filepath.Join(sw.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(ssh.MarshalAuthorizedKey(pub))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	o := keyOptions(sw)
	o.IdentityFile, o.Password = key, fence.NewSecret(passphrase)
	d := openDevice(t, o)
	_, err = d.Status(ctx(t), "1")
	require.NoError(t, err)

	o.Password = fence.NewSecret("")
	_, err = New(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "encrypted")
	o.Password = fence.NewSecret("wrong-phrase")
	_, err = New(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not decrypt")
	assert.NotContains(t, err.Error(), "wrong-phrase")
}

// writeKey writes a new ed25519 private key, encrypted when passphrase is
// set, and returns its public key.
func writeKey(t *testing.T, path, passphrase string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte(passphrase))
	}
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return sp
}

// Nothing listens, or something that never speaks SSH: unreachable,
// within the login timeout.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	var accepted []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted = append(accepted, c) // held open, silent
		}
	}()
	defer l.Close()
	o := Options{Host: "127.0.0.1", Port: port, Username: "u", Password: fence.NewSecret("pw-secret"), InsecureIgnoreHostKey: true, LoginTimeout: 700 * time.Millisecond}
	d := openDevice(t, o)
	took := within(t, 3*time.Second, func() { _, err = d.Status(ctx(t), "1") })
	assert.GreaterOrEqual(t, took, 600*time.Millisecond)
	require.Error(t, err)
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.Contains(t, err.Error(), "login timeout")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Timeout())
	assert.NotContains(t, err.Error(), "pw-secret")

	// Closed port: refused at once.
	l2, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	o.Port = l2.Addr().(*net.TCPAddr).Port
	l2.Close()
	d = openDevice(t, o)
	within(t, 3*time.Second, func() { err = d.Set(ctx(t), "1", off) })
	assert.ErrorIs(t, err, fence.ErrUnreachable)
	assert.True(t, fence.IsNotDone(err))
	assert.Contains(t, err.Error(), "connection refused")
}

// Plugs that are not port numbers never reach the switch.
func TestPlugsNeverReachTheShell(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 4})
	d := openDevice(t, passwordOptions(sw))
	for _, plug := range []string{"1; portcfgpersistentdisable 2", "1\nportcfgpersistentdisable 2", "$(reboot)", "", "-1", "4", "1/1"} {
		_, err := d.Status(ctx(t), plug)
		assert.ErrorIs(t, err, fence.ErrUnknownPlug, "%q", plug)
		err = d.Set(ctx(t), plug, off)
		assert.ErrorIs(t, err, fence.ErrUnknownPlug, "%q", plug)
		assert.True(t, fence.IsNotDone(err))
	}
	cmds, err := sw.Commands()
	require.NoError(t, err)
	for _, c := range cmds {
		assert.Equal(t, "switchshow", c)
	}
	for i := 0; i < 4; i++ {
		assert.Equal(t, on, truth(t, sw, fmt.Sprint(i)))
	}
}

// In this process, without sshd: the same suite of behaviours, for a
// machine without root or openssh-server.
func TestInProcessSwitch(t *testing.T) {
	sw, err := brocadesim.Serve(brocadesim.Options{Ports: 8, Banner: oddBanner, OddWhitespace: true})
	require.NoError(t, err)
	defer sw.Stop()
	for _, o := range []Options{passwordOptions(sw), keyOptions(sw)} {
		d := openDevice(t, o)
		res, err := fence.Do(ctx(t), method(d, "3"), fence.ActionOff)
		require.NoError(t, err)
		assert.True(t, res.Fenced())
		assert.Equal(t, off, truth(t, sw, "3"))
		_, err = fence.Do(ctx(t), method(d, "3"), fence.ActionOn)
		require.NoError(t, err)
		_, err = d.Status(ctx(t), "8")
		assert.ErrorIs(t, err, fence.ErrUnknownPlug)
	}
	o := passwordOptions(sw)
	o.Password = fence.NewSecret("nope-nope")
	_, err = openDevice(t, o).Status(ctx(t), "1")
	assert.True(t, errors.Is(err, fence.ErrLoginDenied), "%v", err)
}
