package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/internal/proctest"
)

// pcsCreate runs pcs -f cib stonith create name agent params... with
// fencectl standing in for agent when ours is set: in a private mount
// namespace, fencectl is bound over /usr/sbin/<agent>, so that pcs (and the
// Pacemaker tool it asks for the metadata) run it under the agent's own
// path, while the real agent stays in place for everyone else.
func pcsCreate(t *testing.T, fencectl, cib, name, agent string, ours bool, params ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pcs := append([]string{"pcs", "-f", cib, "stonith", "create", name, agent}, params...)
	var cmd *exec.Cmd
	if ours {
		script := `mount --bind "$1" "/usr/sbin/$2" || exit 3
"/usr/sbin/$2" -o metadata | grep -q "fencekit driver" || { echo "/usr/sbin/$2 is not fencectl in the namespace"; exit 3; }
shift 2 && exec "$@"`
		cmd = exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", fencectl, agent}, pcs...)...)
	} else {
		cmd = exec.CommandContext(ctx, pcs[0], pcs[1:]...)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// An admin's pcs stonith create validates a device against the agent's
// metadata. Under every agent name fencectl answers to, pcs accepts
// fencectl's metadata with the agent's required parameters, and refuses an
// option the agent does not have, exactly as it does with the installed
// agent. fencectl is seen under the agent's own path through a private
// mount namespace, so the installed agents are never touched.
func TestPcsStonithCreateUnderEveryAgentName(t *testing.T) {
	requireTool(t, "/usr/sbin/pcs")
	requireTool(t, "/usr/bin/unshare")
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root for a private mount namespace")
		}
		t.Skip("needs root for a private mount namespace")
	}
	fencectl := proctest.Fencectl(t, "", "")
	empty, err := exec.Command("cibadmin", "--empty").Output()
	require.NoError(t, err)
	for _, agent := range slices.Sorted(func(yield func(string) bool) {
		for a := range agentProfiles {
			if !yield(a) {
				return
			}
		}
	}) {
		t.Run(agent, func(t *testing.T) {
			requireTool(t, "/usr/sbin/"+agent)
			theirs := agentMetadata(t, agent)
			params := []string{"pcmk_host_list=node4"}
			for _, p := range theirs.Params {
				// action is required="1" in the agents' metadata, yet pcs
				// refuses it (Pacemaker sets it); a deprecated alias is
				// given by its new name.
				if p.Name == "action" || p.Deprecated == "1" {
					continue
				}
				if p.Required == "1" || slices.Contains(requiredByUs[agent], p.Name) {
					v := "x"
					switch p.Name {
					case "ip", "ipaddr":
						v = "127.0.0.1"
					case "plug", "port":
						v = "1"
					}
					params = append(params, p.Name+"="+v)
				}
			}
			for _, ours := range []bool{false, true} {
				who := map[bool]string{false: agent, true: "fencectl as " + agent}[ours]
				cib := filepath.Join(t.TempDir(), "cib.xml")
				require.NoError(t, os.WriteFile(cib, empty, 0o600))
				out, err := pcsCreate(t, fencectl, cib, "dev", agent, ours, params...)
				require.NoError(t, err, "%s: pcs stonith create %v: %s", who, params, out)
				got, err := os.ReadFile(cib)
				require.NoError(t, err)
				assert.Contains(t, string(got), `type="`+agent+`"`, who)

				out, err = pcsCreate(t, fencectl, cib, "dev2", agent, ours, append(slices.Clone(params), "no_such_option=1")...)
				assert.Error(t, err, "%s: pcs accepts an option the agent does not have: %s", who, out)
				assert.Contains(t, out, "no_such_option", who)
			}
		})
	}
}
