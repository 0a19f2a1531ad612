package fencegroup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fencegroup"
)

// fakeCeph writes a ceph command to a temporary directory: it records its
// arguments, then behaves as the file "mode" says: serve the fixtures
// status.json, tree.json and metadata.json ("" or "ok"), fail as ceph does
// when it cannot authenticate ("fail"), hang ("hang"), print something that
// is not JSON ("garbage") or nothing ("empty"), or fail the osd tree only
// ("tree-fails") or the pool list only ("pools-fails"). The pool list is
// the file pools.json.
func fakeCeph(t *testing.T, status, tree, metadata string) (dir string, cli *fencegroup.CLI) {
	t.Helper()
	dir = t.TempDir()
	for name, fx := range map[string]string{"status.json": status, "tree.json": tree, "metadata.json": metadata} {
		if fx != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), fixture(t, fx), 0o644))
		}
	}
	script := `#!/bin/sh
d="$FAKE_CEPH_DIR"
printf '%s\n' "$*" >> "$d/args"
mode=$(cat "$d/mode" 2>/dev/null)
case "$mode" in
fail)
	echo "2025-03-04T12:00:00.000+0000 7f0a1b2c3d40 -1 auth: unable to find a keyring on /etc/ceph/keyring: (2) No such file or directory" >&2
	echo "key = AQBGuWVn9pCXLRAA3JpeFHbOEDhVA5+U4wvIJQ==" >&2
	echo "[errno 13] RADOS permission denied (error connecting to the cluster)" >&2
	exit 13 ;;
hang) sleep 30 ;;
garbage) echo "Error initializing cluster client"; exit 0 ;;
empty) exit 0 ;;
esac
case " $* " in
*" status --format json "*) cat "$d/status.json" ;;
*" osd tree --format json "*)
	if [ "$mode" = tree-fails ]; then echo "Error EACCES: access denied" >&2; exit 13; fi
	cat "$d/tree.json" ;;
*" osd metadata --format json "*) cat "$d/metadata.json" ;;
*" osd pool ls --format json "*)
	if [ "$mode" = pools-fails ]; then echo "Error EACCES: access denied" >&2; exit 13; fi
	cat "$d/pools.json" ;;
*) echo "no valid command found" >&2; exit 22 ;;
esac
`
	path := filepath.Join(dir, "ceph")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return dir, &fencegroup.CLI{Path: path, Env: []string{"FAKE_CEPH_DIR=" + dir}, Timeout: 5 * time.Second}
}

func setMode(t *testing.T, dir, mode string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mode"), []byte(mode), 0o644))
}

func args(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func TestCLIFetch(t *testing.T) {
	dir, cli := fakeCeph(t, "status-squid-degraded.json", "osdtree-reef.json", "osdmetadata-reef.json")
	cli.Cluster, cli.Conf, cli.ID, cli.Keyring = "ceph", "/etc/ceph/ceph.conf", "fencer", "/etc/ceph/ceph.client.fencer.keyring"
	cli.Args = []string{"--mon-host", "[v2:10.1.0.1:3300]"}
	st, err := cli.Fetch(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(129), st.NumPGs)
	assert.Equal(t, fencegroup.OSDCounts{Total: 6, Up: 4, In: 6}, st.OSDs)
	require.Len(t, st.Placement, 6)
	assert.Equal(t, fencegroup.OSD{ID: 0, Host: "worker-0", State: fencegroup.OSDUp}, st.Placement[0])
	assert.Equal(t, []string{
		"--cluster ceph --conf /etc/ceph/ceph.conf --id fencer --keyring /etc/ceph/ceph.client.fencer.keyring --connect-timeout 2 --mon-host [v2:10.1.0.1:3300] status --format json",
		"--cluster ceph --conf /etc/ceph/ceph.conf --id fencer --keyring /etc/ceph/ceph.client.fencer.keyring --connect-timeout 2 --mon-host [v2:10.1.0.1:3300] osd tree --format json",
	}, args(t, dir))

	// Placement from the OSD metadata, or none.
	cli.Placement = fencegroup.PlacementMetadata
	st, err = cli.Fetch(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Placement, 6)
	assert.Equal(t, fencegroup.OSDStateUnknown, st.Placement[0].State)
	cli.Placement = fencegroup.PlacementNone
	st, err = cli.Fetch(t.Context())
	require.NoError(t, err)
	assert.Nil(t, st.Placement)
}

func TestCLIFailures(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		exit    int
		err     string
		timeout bool
	}{
		{mode: "fail", exit: 13, err: "fencegroup: ceph status --format json: exit status 13: " +
			"2025-03-04T12:00:00.000+0000 7f0a1b2c3d40 -1 auth: unable to find a keyring on /etc/ceph/keyring: (2) No such file or directory | " +
			"key = [redacted] | [errno 13] RADOS permission denied (error connecting to the cluster)"},
		{mode: "hang", exit: -1, err: "fencegroup: ceph status --format json: no answer within 300ms: context deadline exceeded", timeout: true},
		{mode: "garbage", exit: 0, err: "fencegroup: ceph status: not a JSON object"},
		{mode: "empty", exit: 0, err: "fencegroup: ceph status --format json: printed nothing"},
		{mode: "tree-fails", exit: 13, err: "fencegroup: ceph osd tree --format json: exit status 13: Error EACCES: access denied"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir, cli := fakeCeph(t, "status-reef-clean.json", "osdtree-reef.json", "")
			cli.Keyring = "/secret/path/keyring"
			if tc.timeout {
				cli.Timeout = 300 * time.Millisecond
			}
			setMode(t, dir, tc.mode)
			start := time.Now()
			st, err := cli.Fetch(t.Context())
			assert.Nil(t, st)
			require.Error(t, err)
			assert.Equal(t, tc.err, err.Error())
			assert.NotContains(t, err.Error(), "/secret/path", "global arguments are never quoted")
			assert.NotContains(t, err.Error(), "AQBGuWVn9pCXLRAA3JpeFHbOEDhVA5", "keys are redacted")
			var ce *fencegroup.CommandError
			if errors.As(err, &ce) {
				assert.Equal(t, tc.exit, ce.Exit)
			}
			assert.Equal(t, tc.timeout, errors.Is(err, context.DeadlineExceeded))
			assert.Less(t, time.Since(start), 3*time.Second, "the hanging command's group is killed")
		})
	}
}

func TestCLICanceled(t *testing.T) {
	dir, cli := fakeCeph(t, "status-reef-clean.json", "", "")
	setMode(t, dir, "hang")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := cli.Fetch(ctx)
	assert.EqualError(t, err, "fencegroup: ceph status --format json: context deadline exceeded")
}

func TestCLIOutputLimitAndMissingBinary(t *testing.T) {
	_, cli := fakeCeph(t, "status-reef-clean.json", "", "")
	cli.MaxOutput = 100
	_, err := cli.Fetch(t.Context())
	assert.EqualError(t, err, "fencegroup: ceph status --format json: printed more than 100 bytes")

	cli = &fencegroup.CLI{Path: filepath.Join(t.TempDir(), "no-ceph")}
	_, err = cli.Fetch(t.Context())
	var ce *fencegroup.CommandError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, -1, ce.Exit)
	assert.Contains(t, err.Error(), "no such file or directory")
}

// The health source runs the CLI: a status read through the fake ceph.
func TestCLIAsHealthSource(t *testing.T) {
	dir, cli := fakeCeph(t, "status-reef-clean.json", "osdtree-squid-host-down.json", "")
	h, err := fencegroup.NewHealth("rook-ceph", cli, fencegroup.HealthOptions{})
	require.NoError(t, err)
	s, err := h.Refresh(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "all 129 PGs active+clean", s.Budget(fencegroup.Rules{}).Reason)
	plan, err := fencegroup.Rules{}.Labels("rook-ceph", s.Status.Placement, []fencegroup.Machine{
		{Name: "stor-0.dc1.example.net"}, {Name: "stor-1.dc1.example.net"}, {Name: "stor-2.dc1.example.net"}, {Name: "gpu-0.dc1.example.net"},
	})
	require.NoError(t, err)
	assert.Len(t, plan.Changes, 3)

	setMode(t, dir, "fail")
	s, err = h.Refresh(t.Context())
	require.Error(t, err)
	assert.NotNil(t, s.Status, "the last status is kept")
	assert.Equal(t, 1, s.Failures)
}

// A status with no PGs and no pools is what the monitors report before the
// manager's first statistics too: the pools are then counted from the OSD
// map (ceph osd pool ls). Pools there: no PGs reported for them, not
// clean; none: clean; the list unreadable: an error, never clean.
func TestCLINoPoolsCheckedWithTheOSDMap(t *testing.T) {
	dir, cli := fakeCeph(t, "status-no-pools.json", "osdtree-pacific.json", "")
	write := func(pools string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "pools.json"), []byte(pools), 0o644))
	}
	write(`["rbd",".mgr"]` + "\n")
	st, err := cli.Fetch(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, st.NumPools)
	b := fencegroup.Rules{}.Budget(st)
	assert.False(t, b.Clean)
	assert.Equal(t, "no PGs reported for 2 pools", b.Reason)
	assert.Contains(t, args(t, dir), "--connect-timeout 2 osd pool ls --format json")

	write("[]\n")
	st, err = cli.Fetch(t.Context())
	require.NoError(t, err)
	b = fencegroup.Rules{}.Budget(st)
	assert.True(t, b.Clean)
	assert.Equal(t, "no PGs (no pools)", b.Reason)

	write("not json")
	_, err = cli.Fetch(t.Context())
	var pe *fencegroup.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, fencegroup.InputPoolList, pe.Input)

	setMode(t, dir, "pools-fails")
	_, err = cli.Fetch(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "osd pool ls")

	// A status with PGs asks nothing more.
	dir, cli = fakeCeph(t, "status-reef-clean.json", "osdtree-reef.json", "")
	_, err = cli.Fetch(t.Context())
	require.NoError(t, err)
	assert.Len(t, args(t, dir), 2)
}
