package fos

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shellRun(t *testing.T, dir, orig, input string) (string, int) {
	t.Helper()
	env := map[string]string{"USER": "admin", "SSH_ORIGINAL_COMMAND": orig}
	var out bytes.Buffer
	code := Main([]string{dir}, func(k string) string { return env[k] }, strings.NewReader(input), &out)
	return out.String(), code
}

func TestCommands(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteConfig(dir, Config{Ports: 4}))
	out, code := shellRun(t, dir, "portcfgpersistentdisable 2; portdisable 1; switchshow", "")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "    2    2   010200   id    N16   No_Light    FC  Disabled (Persistent)\n")
	assert.Contains(t, out, "    1    1   010100   id    N16   No_Light    FC  Disabled\n")
	assert.Contains(t, out, "    0    0   010000   id    N16   Online      FC  F-Port  10:00:00:00:c9:00:00:00\n")

	out, code = shellRun(t, dir, "portenable 2", "")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "persistently disabled")
	out, code = shellRun(t, dir, "PortCfgPersistentEnable 2;portenable 1", "")
	assert.Equal(t, 0, code, out)
	st, err := ReadPorts(dir, 4)
	require.NoError(t, err)
	assert.Equal(t, Port{}, st[1])
	assert.Equal(t, Port{}, st[2])

	for _, bad := range []string{"portshow 4", "portshow -1", "portshow x", "portshow +1", "portshow 1/1"} {
		out, code = shellRun(t, dir, bad, "")
		assert.Equal(t, 1, code, bad)
		assert.True(t, strings.HasPrefix(out, "Invalid port number"), "%s: %q", bad, out)
	}
	out, code = shellRun(t, dir, "portshow", "")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "Usage:")
	out, code = shellRun(t, dir, "fence", "")
	assert.Equal(t, 127, code)
	assert.Equal(t, "rbash: fence: command not found\n", out)

	// Interactive: a prompt per line, exit ends it.
	out, code = shellRun(t, dir, "", "version\n\nportshow 3\r\nexit\nswitchshow\n")
	assert.Equal(t, 0, code)
	assert.Equal(t, 4, strings.Count(out, "fcsim:FID128:admin> "))
	assert.Contains(t, out, "portState: 1\tOnline\n")
	assert.NotContains(t, out, "Index Port")

	// Commands are logged.
	b, err := os.ReadFile(filepath.Join(dir, CommandsFile))
	require.NoError(t, err)
	assert.Contains(t, string(b), "admin\tportcfgpersistentdisable 2\n")
}

func TestFaults(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []Fault{Garbage, Truncated, ShortLines, Refuse, Chatty, Drop} {
		require.NoError(t, WriteConfig(dir, Config{Ports: 2, Fault: f}))
		out, _ := shellRun(t, dir, "switchshow; portcfgpersistentdisable 1", "")
		switch f {
		case Garbage:
			assert.Contains(t, out, "\xff\xfe")
			assert.NotContains(t, out, "=====")
		case Truncated:
			assert.Contains(t, out, "switchName:")
			assert.NotContains(t, out, "=====")
		case ShortLines:
			assert.Contains(t, out, "    1    1   010100   id    N16\n")
		case Refuse:
			assert.Contains(t, out, "RBAC permission denied.\n")
		case Chatty:
			assert.Contains(t, out, "Committing configuration...done.\n")
		case Drop:
			assert.Empty(t, out)
		}
	}
	// Hang and NoPrompt wait for the end of the input.
	require.NoError(t, WriteConfig(dir, Config{Ports: 2, Fault: NoPrompt}))
	out, _ := shellRun(t, dir, "", "switchshow\n")
	assert.True(t, strings.HasSuffix(out, noise), "%q", out)
}

func TestOddWhitespaceAndDirector(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteConfig(dir, Config{Ports: 20, Director: true, OddWhitespace: true, Banner: "hello\nworld"}))
	out, _ := shellRun(t, dir, "", "portcfgpersistentdisable 2/3\nswitchshow\n")
	assert.True(t, strings.HasPrefix(out, "hello \t \r\r\nworld \t \r\r\n"), "%q", out)
	assert.Contains(t, out, "\t")
	assert.Contains(t, out, "Disabled")
	st, err := ReadPorts(dir, 20)
	require.NoError(t, err)
	assert.True(t, st[19].Persistent)
}
