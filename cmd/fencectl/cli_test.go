package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence"
)

func fakeTable() *table {
	d, _ := fence.DefaultRegistry().Lookup("fake")
	return newTable([]*fence.Driver{d})
}

func TestParseArgsForms(t *testing.T) {
	tab := fakeTable()
	for _, args := range [][]string{
		{"--action=status"}, {"--action", "status"}, {"-ostatus"}, {"-o", "status"},
		{"--act=status"}, {"--acti", "status"}, {"-o", "off", "--action", "status"},
	} {
		in, err := tab.parseArgs(args)
		require.NoError(t, err, args)
		assert.Equal(t, "status", in.values["action"], args)
	}
}

func TestParseArgsShortAndAliases(t *testing.T) {
	tab := fakeTable()
	in, err := tab.parseArgs([]string{
		"-a", "10.0.0.5", "-u", "623", "-l", "admin", "-p" + secret, "-n", "3", "-m", "cycle",
		"-C", ";", "-S", "echo x", "-vvq", "--ssl-insecure", "--power-wait=2", "--retry-on", "3",
		"--delay", "4", "--stonith-status-sleep", "0.5", "--power-timeout", "8", "--shell-timeout", "7",
		"--state-file", "/tmp/f", "--switch-delay=0.1", "--plugs", "4",
	})
	require.NoError(t, err)
	want := map[string]string{
		"ip": "10.0.0.5", "ipport": "623", "username": "admin", "password": secret, "plug": "3",
		"method": "cycle", "separator": ";", "password_script": "echo x", "quiet": "1",
		"ssl_insecure": "1", "power_wait": "2", "retry_on": "3", "delay": "4",
		"stonith_status_sleep": "0.5", "power_timeout": "8", "io_timeout": "7",
		"state_file": "/tmp/f", "switch_delay": "0.1", "plugs": "4",
	}
	for k, v := range want {
		assert.Equal(t, v, in.values[k], k)
	}
	assert.Equal(t, 2, in.verbose)
	assert.Equal(t, "--shell-timeout", in.given["io_timeout"], "messages name the option as given")

	in, err = tab.parseArgs([]string{"--login", "u", "--port", "p1", "--ipaddr", "h", "--passwd", "pw", "--status-file", "f", "--debug", "d"})
	require.NoError(t, err)
	assert.Equal(t, "u", in.values["username"])
	assert.Equal(t, "p1", in.values["plug"])
	assert.Equal(t, "h", in.values["ip"])
	assert.Equal(t, "pw", in.values["password"])
	assert.Equal(t, "f", in.values["state_file"])
	assert.Equal(t, "d", in.values["debug_file"])
}

func TestParseArgsFlagsAndPositionals(t *testing.T) {
	tab := fakeTable()
	in, err := tab.parseArgs([]string{"extra", "--ssl-insecure=no", "-o", "status", "--", "-n", "x"})
	require.NoError(t, err)
	assert.Equal(t, "0", in.values["ssl_insecure"])
	assert.Equal(t, []string{"extra", "-n", "x"}, in.unused)
	assert.NotContains(t, in.values, "plug")
}

func TestParseArgsErrors(t *testing.T) {
	tab := fakeTable()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--bogus-opt"}, "Parse error: option --bogus-opt not recognized"},
		{[]string{"--bogus=" + secret}, "Parse error: option --bogus not recognized"},
		{[]string{"-Z"}, "Parse error: option -Z not recognized"},
		{[]string{"--state-file"}, "Parse error: option --state-file requires argument"},
		{[]string{"--status-file"}, "Parse error: option --status-file requires argument"},
		{[]string{"-o"}, "Parse error: option -o requires argument"},
		{[]string{"--ssl-insecure=maybe"}, "Parse error: option --ssl-insecure must not have an argument"},
		{[]string{"--p", "x"}, "Parse error: option --p not a unique prefix"},
	} {
		_, err := tab.parseArgs(c.args)
		require.Error(t, err, c.args)
		assert.Equal(t, c.msg, err.Error(), c.args)
		assert.NotContains(t, err.Error(), secret)
	}
}

func TestParseStdin(t *testing.T) {
	tab := fakeTable()
	in := tab.parseStdin(strings.Split(strings.Join([]string{
		"# a comment",
		"",
		"   ",
		"  action=status  ",
		"ipaddr=10.0.0.1",
		"login=admin",
		"passwd=" + secret,
		"port=n1",
		"plug=n2", // later wins
		`state-file="/tmp/a b"`,
		"power_wait=2",
		"power-timeout=9",
		"password_script=a=b \"c\"",
		"ssl_insecure=true",
		"verbose=1",
		"quiet=no",
		"nodename=node-7",
		"ACTION=off",
		"foo=" + secret,
		"novalue",
		secret,
		"password: " + secret + "=x",
		"soft=maybe",
		"driver=fake\r",
	}, "\n"), "\n"))
	assert.Equal(t, map[string]string{
		"action": "status", "ip": "10.0.0.1", "username": "admin", "password": secret, "plug": "n2",
		"state_file": "/tmp/a b", "power_wait": "2", "power_timeout": "9", "password_script": `a=b "c"`,
		"ssl_insecure": "1", "verbose": "1", "quiet": "0", "driver": "fake",
	}, in.values)
	assert.Equal(t, 1, in.verbose)
	assert.Equal(t, "node-7", in.nodename)
	assert.Equal(t, []string{
		"Parse error: Ignoring unknown option 'ACTION'",
		"Parse error: Ignoring an unknown option on line 19 of standard input (not shown: it may hold a secret)",
		"Parse error: Ignoring line 20 of standard input: not name=value (the line is not shown: it may hold a secret)",
		"Parse error: Ignoring line 21 of standard input: not name=value (the line is not shown: it may hold a secret)",
		"Parse error: Ignoring line 22 of standard input: not name=value (the line is not shown: it may hold a secret)",
		"Parse error: Ignoring option 'soft' because it does not have value",
	}, in.warnings)
	for _, w := range in.warnings {
		assert.NotContains(t, w, secret)
	}
}

func TestStatusAndPowerLines(t *testing.T) {
	f := stateFile(t, "on")
	steps := []struct {
		action, stdout string
		code           int
		file           string
	}{
		{"status", "Status: ON\n", 0, "on"},
		{"off", "Success: Powered OFF\n", 0, "off"},
		{"off", "Success: Already OFF\n", 0, "off"},
		{"status", "Status: OFF\n", 2, "off"},
		{"on", "Success: Powered ON\n", 0, "on"},
		{"on", "Success: Already ON\n", 0, "on"},
		{"reboot", "Success: Rebooted\n", 0, "on"},
		{"monitor", "", 0, "on"},
		{"validate-all", "", 0, "on"},
		{"ON", "Success: Already ON\n", 0, "on"},
		{"disable", "Success: Powered OFF\n", 0, "off"},
		{"reboot", "Success: Rebooted\n", 0, "on"},
	}
	for _, s := range steps {
		r := runCLI(t, "", "--driver", "fake", "--state-file", f, "-o", s.action)
		assert.Equal(t, s.stdout, r.stdout, s.action)
		assert.Equal(t, s.code, r.code, s.action)
		assert.Empty(t, r.stderr, s.action)
		assert.Equal(t, s.file, readFile(t, f), s.action)
	}
	// No action: reboot, as the agents.
	r := runCLI(t, "", "--driver", "fake", "--state-file", f)
	assert.Equal(t, "Success: Rebooted\n", r.stdout)
}

func TestStdinRun(t *testing.T) {
	f := stateFile(t, "off")
	r := runCLI(t, "driver=fake\nstatus_file="+f+"\naction=on\n")
	assert.Equal(t, result{stdout: "Success: Powered ON\n"}, r)
	r = runCLI(t, "# Pacemaker\ndriver=fake\nnodename=node1\nstate-file=\""+f+"\"\naction=status\n")
	assert.Equal(t, result{stdout: "Status: ON\n"}, r)
	r = runCLI(t, "driver=fake\nstate_file="+f+"\naction=status\nmethod=cycle\nfoo=bar\n")
	assert.Equal(t, "Status: ON\n", r.stdout)
	assert.Equal(t, []string{"WARNING: Parse error: Ignoring an unknown option on line 5 of standard input (not shown: it may hold a secret)"}, messages(r.stderr))
	// A typo of an option is named, with what it is near.
	r = runCLI(t, "driver=fake\nstate_file="+f+"\naction=status\npasword=x\n")
	assert.Equal(t, []string{"WARNING: Parse error: Ignoring unknown option 'pasword'"}, messages(r.stderr))
	// Arguments given: standard input is not read.
	r = runCLI(t, "action=off\n", "--driver", "fake", "--state-file", f, "-o", "status")
	assert.Equal(t, "Status: ON\n", r.stdout)
	// Quiet silences warnings too.
	r = runCLI(t, "driver=fake\nstate_file="+f+"\naction=status\nfoo=bar\nquiet=1\n")
	assert.Equal(t, result{stdout: "Status: ON\n"}, r)
}

func TestAgentNamePicksDriver(t *testing.T) {
	f := stateFile(t, "on")
	r := runAs(t, "/usr/local/sbin/fence_dummy", "", "--status-file", f, "-o", "status")
	assert.Equal(t, result{stdout: "Status: ON\n"}, r)
	r = runAs(t, "fence_dummy", "status_file="+f+"\naction=off\n")
	assert.Equal(t, result{stdout: "Success: Powered OFF\n"}, r)
	// --driver still wins, and an agent name works as a driver name.
	r = runAs(t, "fence_probe", "", "--driver", "fence_dummy", "--state-file", f, "-o", "status")
	assert.Equal(t, 2, r.code)
}

func TestAddressAndList(t *testing.T) {
	name := "list-" + strings.ToLower(t.Name())
	t.Cleanup(func() { fake.Forget(name) })
	addr := "fake://" + name
	r := runCLI(t, "", "--address", addr, "--plugs", "3", "-n", "2", "-o", "off")
	require.Equal(t, result{stdout: "Success: Powered OFF\n"}, r)
	assert.Equal(t, fence.StateOff, fake.Named(name).Truth("2"))

	r = runCLI(t, "", "--address", addr, "-o", "list")
	assert.Equal(t, result{stdout: "1,node1\n2,node2\n3,node3\n"}, r)
	r = runCLI(t, "", "--address="+addr, "-o", "list-status", "-C", ";")
	assert.Equal(t, result{stdout: "1;node1;on\n2;node2;off\n3;node3;on\n"}, r)
	r = runCLI(t, "address="+addr+"\naction=list-status\n")
	assert.Equal(t, result{stdout: "1,node1,on\n2,node2,off\n3,node3,on\n"}, r)
	fake.Named(name).Inject(fake.Fault{Op: fake.OpList, Kind: fake.BadState, Times: 1})
	r = runCLI(t, "", "--address", addr, "-o", "list-status")
	assert.Equal(t, "1,node1,UNKNOWN\n2,node2,UNKNOWN\n3,node3,UNKNOWN\n", r.stdout)

	// ip= may hold the URL too.
	r = runCLI(t, "", "--ip", addr, "-n", "2", "-o", "status")
	assert.Equal(t, result{stdout: "Status: OFF\n", code: 2}, r)

	// A device without a plug list: the agents' notice.
	r = runCLI(t, "", "--driver", "probe", "-a", "h", "-l", "u", "-p", "p", "-o", "list")
	assert.Equal(t, result{stdout: "NOTICE: List option is not working on this device yet\n"}, r)
}

// namedFake returns a fresh named fake device with one plug "1" and its address.
func namedFake(t *testing.T, o fake.Options) (*fake.Device, string) {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	o.Plugs = []string{"1"}
	d := fake.NewNamed(name, o)
	t.Cleanup(func() { fake.Forget(name) })
	return d, "fake://" + name
}

// fast are timing options that make failures quick.
var fast = []string{"--power-timeout", "0.2", "--stonith-status-sleep", "0.05"}

func TestFailureMessages(t *testing.T) {
	cases := []struct {
		name    string
		initial fence.State
		fault   fake.Fault
		args    []string
		stdout  string
		code    int
		msgs    []string
	}{
		{"off ignored", fence.StateOn, fake.Fault{Op: fake.OpSet, Kind: fake.Ignore}, []string{"-o", "off"},
			"", 1, []string{"ERROR: Failed: Timed out waiting to power OFF"}},
		{"on ignored", fence.StateOff, fake.Fault{Op: fake.OpSet, Kind: fake.Ignore}, []string{"-o", "on", "--retry-on", "0"},
			"", 1, []string{"ERROR: Failed: Timed out waiting to power ON"}},
		{"reboot off ignored", fence.StateOn, fake.Fault{Op: fake.OpSet, Kind: fake.Ignore}, []string{"-o", "reboot"},
			"", 1, []string{"ERROR: Failed: Timed out waiting to power OFF"}},
		{"reboot on ignored", fence.StateOff, fake.Fault{Op: fake.OpSet, Kind: fake.Ignore}, []string{"-o", "reboot"},
			"Success: Rebooted\n", 0, []string{"ERROR: Timed out waiting to power ON"}},
		{"bad state", fence.StateOn, fake.Fault{Op: fake.OpStatus, Kind: fake.BadState}, []string{"-o", "status"},
			"", 1, []string{"ERROR: Failed: Unable to obtain correct plug status or plug is not available"}},
		{"unknown plug", fence.StateOn, fake.Fault{}, []string{"-o", "off", "-n", "9"},
			"", 1, []string{"ERROR: Failed: Unable to obtain correct plug status or plug is not available"}},
		{"unreachable", fence.StateOn, fake.Fault{Kind: fake.Down}, []string{"-o", "off"},
			"", 1, []string{"ERROR: Unable to connect/login to fencing device"}},
		{"login denied", fence.StateOn, fake.Fault{Op: fake.OpStatus, Kind: fake.Fail, Err: fence.ErrLoginDenied}, []string{"-o", "status"},
			"", 1, []string{"ERROR: Unable to connect/login to fencing device"}},
		{"set refused", fence.StateOn, fake.Fault{Op: fake.OpSet, Kind: fake.Fail}, []string{"-o", "off"},
			"", 1, []string{"ERROR: Failed: Timed out waiting to power OFF"}},
		{"hung status", fence.StateOn, fake.Fault{Op: fake.OpStatus, Kind: fake.Hang}, []string{"-o", "status", "--io-timeout", "0.1"},
			"", 1, []string{"ERROR: Connection timed out"}},
		{"cycle refused", fence.StateOn, fake.Fault{Op: fake.OpCycle, Kind: fake.Fail}, []string{"-o", "reboot", "-m", "cycle"},
			"", 1, []string{"ERROR: Connection timed out"}},
		{"monitor bad state", fence.StateOn, fake.Fault{Op: fake.OpMonitor, Kind: fake.BadState}, []string{"-o", "monitor"},
			"", 1, []string{"ERROR: Failed: Unable to obtain correct plug status or plug is not available"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, addr := namedFake(t, fake.Options{Initial: c.initial})
			if c.fault.Kind != 0 {
				d.Inject(c.fault)
			}
			args := append([]string{"--address", addr, "-n", "1", "-p", secret}, fast...)
			args = append(args, c.args...)
			r := runCLI(t, "", args...)
			assert.Equal(t, c.stdout, r.stdout)
			assert.Equal(t, c.code, r.code)
			assert.Equal(t, c.msgs, messages(r.stderr))
			det := details(r.stderr)
			require.Len(t, det, 1, "one detailed line follows the agents' message: %s", r.stderr)
			assert.Contains(t, det[0], "method fencectl")
			assert.Contains(t, det[0], "driver fake")
			assert.Contains(t, det[0], "plug ")
			assert.NotContains(t, r.stderr+r.stdout, secret)
			// The detailed line comes right after the agents' message.
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			require.Len(t, lines, 2)
			assert.Contains(t, lines[1], "ERROR: fence: ")
		})
	}
}

func TestDeadlineIsConnectionTimeout(t *testing.T) {
	d, addr := namedFake(t, fake.Options{})
	d.Inject(fake.Fault{Op: fake.OpStatus, Kind: fake.Hang})
	var out, errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	code := run(ctx, []string{"fencectl", "--address", addr, "-n", "1", "-o", "status"}, nil, &out, &errb, noEnv)
	assert.Equal(t, 1, code)
	assert.Equal(t, []string{"ERROR: Connection timed out"}, messages(errb.String()))
}

func TestUsageErrors(t *testing.T) {
	f := stateFile(t, "on")
	usage := "ERROR: Please use '-h' for usage"
	cases := []struct {
		args []string
		msgs []string
	}{
		{[]string{"--driver", "fake", "--state-file", f, "-o", "bogus"}, []string{"ERROR: Failed: Unrecognised action 'bogus'", usage}},
		{[]string{"--driver", "fake", "--bogus"}, []string{"ERROR: Parse error: option --bogus not recognized", usage}},
		{[]string{"--driver", "fake", "--state-file", f, "--delay", "abc", "-o", "status"},
			[]string{"ERROR: Failed: The value you have entered for --delay is not a valid time in seconds", usage}},
		{[]string{"--driver", "fake", "--state-file", f, "--retry-on", "x", "-o", "status"},
			[]string{"ERROR: Failed: The value you have entered for --retry-on is not a valid integer", usage}},
		{[]string{"--driver", "fake", "--state-file", f, "-m", "twice", "-o", "reboot"},
			[]string{"ERROR: Failed: You have to enter a valid choice for --method from the valid values: ['onoff', 'cycle']", usage}},
		{[]string{"-o", "status"}, []string{"ERROR: Failed: You have to choose a driver (--driver) or give an address URL (--address fake://name)", usage}},
		{[]string{"--driver", "nope", "-o", "status"}, []string{"ERROR: Failed: Unknown driver 'nope' (drivers: " + registeredDrivers() + ")", usage}},
		{[]string{"--driver", "probe", "-o", "status"}, []string{"ERROR: Failed: You have to set login name", usage}},
		{[]string{"--driver", "probe", "-l", "u", "-o", "status"}, []string{"ERROR: Failed: You have to enter fence address", usage}},
		{[]string{"--driver", "probe", "-l", "u", "-a", "h", "-o", "status"}, []string{"ERROR: Failed: You have to enter password or password script", usage}},
		{[]string{"--driver", "probe", "-l", "u", "-a", "h", "-p", secret, "-o", "status"}, []string{"ERROR: Failed: You have to enter plug number or machine identification", usage}},
		{[]string{"--driver", "probe", "-o", "validate-all"}, []string{
			"ERROR: Failed: You have to set login name",
			"ERROR: Failed: You have to enter fence address",
			"ERROR: Failed: You have to enter password or password script",
			"ERROR: Failed: You have to enter plug number or machine identification",
			"ERROR: validate-all failed", usage}},
		// Options of another driver are not options of this one.
		{[]string{"--driver", "probe", "--state-file", f}, []string{"ERROR: Parse error: option --state-file not recognized", usage}},
		{[]string{"--driver", "fake", "--lanplus"}, []string{"ERROR: Parse error: option --lanplus not recognized", usage}},
	}
	for _, c := range cases {
		r := runCLI(t, "", c.args...)
		assert.Equal(t, 1, r.code, c.args)
		assert.Empty(t, r.stdout, c.args)
		assert.Equal(t, c.msgs, messages(r.stderr), c.args)
	}
	// Stdin: the same messages.
	r := runCLI(t, "driver=fake\nstate_file="+f+"\naction=status\ndelay=abc\n")
	assert.Equal(t, []string{"ERROR: Failed: The value you have entered for --delay is not a valid time in seconds", usage}, messages(r.stderr))
	// Stray arguments are only warned about.
	r = runCLI(t, "", "--driver", "fake", "--state-file", f, "-o", "status", "extra_arg")
	assert.Equal(t, "Status: ON\n", r.stdout)
	assert.Equal(t, []string{"WARNING: Unused arguments on command line: ['extra_arg']"}, messages(r.stderr))
}

func TestOpenErrors(t *testing.T) {
	r := runCLI(t, "", "--driver", "fake", "--plugs", "0", "-o", "status")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, []string{"ERROR: Failed: The value you have entered for --plugs is not valid", "ERROR: Please use '-h' for usage"}, messages(r.stderr))
	assert.Len(t, details(r.stderr), 1)

	r = runCLI(t, "", "--driver", "probe", "-a", "h", "-l", "u", "-p", "wrong-password", "-n", "n1", "-o", "status")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, []string{"ERROR: Unable to connect/login to fencing device"}, messages(r.stderr))

	r = runCLI(t, "", "--driver", "probe", "-a", "h", "-l", "u", "-p", secret, "-n", "n1", "-o", "status", "--lanplus", "--community", "c0mmun1ty-str")
	assert.Equal(t, result{stdout: "Status: ON\n"}, r)
}

func TestQuietVerboseDebugFile(t *testing.T) {
	f := stateFile(t, "garbage")
	r := runCLI(t, "", "--driver", "fake", "--state-file", f, "-o", "status", "-q")
	assert.Equal(t, result{code: 1}, r)

	r = runCLI(t, "", "--driver", "fake", "--state-file", f, "-o", "status", "-v")
	assert.Contains(t, r.stderr, "level=DEBUG")
	assert.Contains(t, r.stderr, "ERROR: Failed: Unable to obtain correct plug status or plug is not available")

	good := stateFile(t, "on")
	r = runCLI(t, "driver=fake\nstate_file="+good+"\naction=status\nverbose=1\n")
	assert.Equal(t, "Status: ON\n", r.stdout)
	assert.Contains(t, r.stderr, "level=DEBUG msg=attempt phase=status")

	dbg := filepath.Join(t.TempDir(), "debug.log")
	r = runCLI(t, "", "--driver", "fake", "--state-file", f, "-o", "status", "-q", "-D", dbg, "-p", secret)
	assert.Equal(t, result{code: 1}, r)
	log := readFile(t, dbg)
	assert.Contains(t, log, "level=DEBUG")
	assert.Contains(t, log, "ERROR: Failed: Unable to obtain correct plug status")
	assert.NotContains(t, log, secret)

	r = runCLI(t, "", "--driver", "fake", "-D", filepath.Join(t.TempDir(), "no", "such", "dir"), "-o", "status")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, messages(r.stderr)[0], "Failed: Unable to create file")
}

func TestPasswordNeverPrinted(t *testing.T) {
	f := stateFile(t, "on")
	garbage := stateFile(t, "garbage")
	script := filepath.Join(t.TempDir(), "pw.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho '"+secret+"'\n"), 0o755))
	d, addr := namedFake(t, fake.Options{})
	d.Inject(fake.Fault{Kind: fake.Down, Err: fmt.Errorf("refused for password %s", secret)})

	runs := []struct {
		stdin string
		args  []string
	}{
		{"", []string{"--driver", "fake", "--state-file", f, "-o", "status", "-p", secret, "-v"}},
		{"", []string{"--driver", "fake", "--state-file", f, "-o", "off", "--password=" + secret, "-vv"}},
		{"", []string{"--driver", "fake", "--state-file", garbage, "-o", "off", "-p" + secret, "-v"}},
		{"", []string{"--driver", "fake", "--state-file", f, "-o", "status", "-S", script, "-v"}},
		{"", []string{"--driver", "fake", "--state-file", f, "-o", "status", "-p", secret, "--delay", "abc", "-v"}},
		{"", []string{"--driver", "fake", "--state-file", f, "-p", secret, "-o", "bogus", "-v"}},
		{"", []string{"--driver", "fake", "-p", secret, "-o", "metadata"}},
		{"", []string{"--driver", "fake", "-p", secret, "--help"}},
		{"", []string{"--address", addr, "-n", "1", "-p", secret, "-o", "off", "-v"}},
		{"", []string{"--driver", "probe", "-a", "h", "-l", "u", "-p", secret, "-n", "n1", "-v", "--community", secret, "-o", "off"}},
		{"", []string{"--driver", "probe", "-a", "h", "-l", "u", "-p", secret, "-n", "nope", "-v", "-o", "off"}},
		{"driver=fake\nstate_file=" + f + "\naction=status\npasswd=" + secret + "\nverbose=1\n", nil},
		{"driver=fake\nstate_file=" + garbage + "\naction=off\npassword=\"" + secret + "\"\nverbose=1\n", nil},
		{"driver=fake\nstate_file=" + f + "\naction=status\npasword=" + secret + "\nverbose=1\n", nil},
		{"address=" + addr + "\nport=1\naction=reboot\npasswd=" + secret + "\nverbose=1\n", nil},
	}
	t.Cleanup(func() { safetyNet = true })
	for _, net := range []bool{true, false} {
		safetyNet = net
		for _, c := range runs {
			if !net && (slices.Contains(c.args, addr) || strings.Contains(c.stdin, addr)) {
				continue // the driver's own error quotes it: only the safety net helps
			}
			r := runCLI(t, c.stdin, c.args...)
			assert.NotContains(t, r.stdout, secret, "net %v: %v %q", net, c.args, c.stdin)
			assert.NotContains(t, r.stderr, secret, "net %v: %v %q", net, c.args, c.stdin)
		}
	}
	safetyNet = true
	// The driver's error quoted the password: the safety net caught it.
	r := runCLI(t, "", "--address", addr, "-n", "1", "-p", secret, "-o", "status")
	assert.Contains(t, r.stderr, "refused for password REDACTED")
}

func TestHelpVersion(t *testing.T) {
	r := runCLI(t, "", "--help")
	assert.Equal(t, 0, r.code)
	for _, s := range []string{"-a, --ip=[ip]", "-l, --username=[name]", "-p, --password=[password]", "-n, --plug=[id]",
		"-o, --action=[action]", "--power-timeout=[seconds]", "--ssl-insecure", "Options of driver fake:",
		"--state-file=[file]", "Options of driver probe:", "--community=[value]", "(also --port)"} {
		assert.Contains(t, r.stdout, s)
	}
	r = runCLI(t, "", "--driver", "fake", "-h")
	assert.Contains(t, r.stdout, "--switch-delay=[seconds]")
	assert.NotContains(t, r.stdout, "--community")
	r = runAs(t, "fence_dummy", "", "-h")
	assert.Contains(t, r.stdout, "\tfence_dummy [options]")
	assert.Contains(t, r.stdout, "--state-file")

	r = runCLI(t, "", "-V")
	assert.Equal(t, 0, r.code)
	assert.True(t, strings.HasPrefix(r.stdout, "fencekit "), r.stdout)
}

type raXML struct {
	XMLName   xml.Name  `xml:"resource-agent"`
	Name      string    `xml:"name,attr"`
	Shortdesc string    `xml:"shortdesc,attr"`
	Params    []raParam `xml:"parameters>parameter"`
	Actions   []struct {
		Name string `xml:"name,attr"`
	} `xml:"actions>action"`
}

// raParam is a parameter of a fence agent's metadata.
type raParam struct {
	Name       string `xml:"name,attr"`
	Required   string `xml:"required,attr"`
	Private    string `xml:"private,attr"`
	Deprecated string `xml:"deprecated,attr"`
	Obsoletes  string `xml:"obsoletes,attr"`
	Getopt     struct {
		Mixed string `xml:"mixed,attr"`
	} `xml:"getopt"`
	Content struct {
		Type    string `xml:"type,attr"`
		Default string `xml:"default,attr"`
		Options []struct {
			Value string `xml:"value,attr"`
		} `xml:"option"`
	} `xml:"content"`
}

func TestMetadata(t *testing.T) {
	for _, args := range [][]string{{"-o", "metadata"}, {"-o", "meta-data"}, {"--action=manpage"}} {
		r := runAs(t, "fence_probe", "", args...)
		require.Equal(t, 0, r.code)
		var ra raXML
		require.NoError(t, xml.Unmarshal([]byte(r.stdout), &ra), r.stdout)
		assert.Equal(t, "fence_probe", ra.Name)
		byName := map[string]int{}
		for i, p := range ra.Params {
			byName[p.Name] = i
		}
		get := func(n string) int {
			i, ok := byName[n]
			require.True(t, ok, n)
			return i
		}
		a := ra.Params[get("action")]
		assert.Equal(t, "1", a.Required)
		assert.Equal(t, "reboot", a.Content.Default)
		assert.Equal(t, "-o, --action=[action]", a.Getopt.Mixed)
		// No private="1": pcs refuses the attribute, and the agents never
		// write it.
		for _, n := range []string{"password", "passwd", "community", "password_script", "username"} {
			assert.Empty(t, ra.Params[get(n)].Private, n)
		}
		ip := ra.Params[get("ip")]
		assert.Equal(t, "1", ip.Required)
		assert.Equal(t, "ipaddr", ip.Obsoletes)
		assert.Equal(t, "1", ra.Params[get("ipaddr")].Deprecated)
		assert.Equal(t, "port", ra.Params[get("plug")].Obsoletes)
		assert.Equal(t, "boolean", ra.Params[get("lanplus")].Content.Type)
		assert.Equal(t, "second", ra.Params[get("power_timeout")].Content.Type)
		m := ra.Params[get("method")]
		assert.Equal(t, "select", m.Content.Type)
		assert.Len(t, m.Content.Options, 2)
		var acts []string
		for _, x := range ra.Actions {
			acts = append(acts, x.Name)
		}
		assert.Equal(t, actions, acts)
	}
	// Standard input, as Pacemaker asks.
	r := runCLI(t, "driver=fake\naction=metadata\n")
	var ra raXML
	require.NoError(t, xml.Unmarshal([]byte(r.stdout), &ra))
	assert.Equal(t, "fencectl", ra.Name)
	found := false
	for _, p := range ra.Params {
		found = found || p.Name == "state_file"
	}
	assert.True(t, found)
	// The exact shape of one parameter, as the agents print it.
	assert.Contains(t, r.stdout, "\t<parameter name=\"action\" unique=\"0\" required=\"1\">\n"+
		"\t\t<getopt mixed=\"-o, --action=[action]\" />\n"+
		"\t\t<content type=\"string\" default=\"reboot\"  />\n")
}

func TestTuneTimeouts(t *testing.T) {
	f := stateFile(t, "on")
	open := func(getenv func(string) string, args ...string) *fence.Method {
		c := &cli{getenv: getenv}
		tab := fakeTable()
		in, err := tab.parseArgs(append([]string{"--state-file", f}, args...))
		require.NoError(t, err)
		p, code := c.params(context.Background(), tab, in)
		require.Zero(t, code)
		m, err := fence.DefaultRegistry().Open(context.Background(), "", &fence.MethodOptions{Name: "t", Driver: "fake", Params: p})
		require.NoError(t, err)
		c.tune(m, in, slogDiscard)
		return m
	}
	m := open(noEnv, "--power-timeout", "3", "--power-wait", "1", "--stonith-status-sleep", "0.5",
		"--retry-on", "2", "--delay", "4", "--shell-timeout", "6", "-m", "cycle")
	assert.Equal(t, 3*time.Second, m.Options.PowerTimeout)
	assert.Equal(t, time.Second, m.Options.PowerWait)
	assert.Equal(t, 500*time.Millisecond, m.Options.PollInterval)
	assert.Equal(t, 2, m.Options.RetryOn)
	assert.Equal(t, 4*time.Second, m.Options.Delay)
	assert.Equal(t, 6*time.Second, m.Options.IOTimeout)
	assert.Equal(t, fence.RebootCycle, m.Options.RebootMethod, "the fake device has a native cycle")

	pcmk := func(k string) string {
		if k == "PCMK_service" {
			return "pacemaker-fenced"
		}
		return ""
	}
	assert.Equal(t, unbounded, open(pcmk).Options.PowerTimeout)
	assert.Equal(t, unbounded, open(pcmk, "--power-timeout", "5").Options.PowerTimeout, "as the agents: Pacemaker disables timeouts")
	assert.Equal(t, 5*time.Second, open(pcmk, "--power-timeout", "5", "--disable-timeout", "false").Options.PowerTimeout)
	assert.Equal(t, unbounded, open(noEnv, "--power-timeout", "0").Options.PowerTimeout)
	assert.Equal(t, unbounded, open(noEnv, "--disable-timeout=yes").Options.PowerTimeout)
	assert.Equal(t, fence.NoRetry, open(noEnv, "--retry-on", "0").Options.RetryOn)
}

func TestCycleFallsBackToOnOff(t *testing.T) {
	r := runCLI(t, "", "--driver", "probe", "-a", "h", "-l", "u", "-p", "p", "-n", "n1", "-m", "cycle", "-o", "reboot")
	assert.Equal(t, result{stdout: "Success: Rebooted\n"}, r)
}

// registeredDrivers lists the drivers fencectl knows, as its error does.
func registeredDrivers() string {
	var names []string
	for _, d := range fence.DefaultRegistry().Drivers() {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

// A password script that fails after printing the password (or a part of
// it) to its standard error: nothing of it reaches fencectl's output.
func TestPasswordScriptStderrNotShown(t *testing.T) {
	f := stateFile(t, "on")
	for _, script := range []string{
		"echo 'cannot decrypt " + secret + "' >&2; exit 3",
		"echo " + secret[:8] + " >&2; echo " + secret + "; exit 1",
	} {
		r := runCLI(t, "", "--driver", "fake", "--state-file", f, "-o", "off", "--password-script", script)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "Failed: Unable to run the password script: exit status")
		assert.Contains(t, r.stderr, "bytes to standard error, not shown")
		assert.NotContains(t, r.stderr+r.stdout, secret[:8])
		assert.Equal(t, "on", readFile(t, f))
	}
}

// runEnv runs fencectl in-process under prog with an environment.
func runEnv(t testing.TB, prog string, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, append([]string{prog}, args...), strings.NewReader(stdin), &out, &errb, func(k string) string { return env[k] })
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// Strict mode (fence_fencekit by default, FENCEKIT_STRICT=1 otherwise):
// an action line that does not parse (ACTION=off, upper case) leaves no
// default reboot to run, a repeated option no last value to take, a state
// file in a missing directory no "off" to read: each is an error, and
// nothing is switched. Without it, the agents' behaviour (a warning and the
// default, the last value, off).
func TestStrictMode(t *testing.T) {
	f := stateFile(t, "on")
	missing := filepath.Join(t.TempDir(), "no-such-dir", "status")
	for _, tc := range []struct {
		name, stdin, msg string
		lax              result
	}{
		{"upper-case action", "driver=fake\nstate_file=" + f + "\nACTION=off\n", "unknown option 'ACTION' (strict mode)",
			result{stdout: "Success: Rebooted\n"}},
		{"a line that does not parse", "driver=fake\nstate_file=" + f + "\naction off\n", "line 3 of standard input: not name=value",
			result{stdout: "Success: Rebooted\n"}},
		{"an option twice", "driver=fake\nstate_file=" + f + "\naction=status\naction=off\n", "option --action given more than once",
			result{stdout: "Success: Powered OFF\n"}},
		{"a state file in a missing directory", "driver=fake\nstate_file=" + missing + "\naction=status\n", "does not exist (strict mode",
			result{stdout: "Status: OFF\n", code: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(f, []byte("on"), 0o644))
			r := runAs(t, "fence_fencekit", tc.stdin)
			assert.Equal(t, 1, r.code, "%+v", r)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.msg)
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			assert.Equal(t, "on", string(b), "nothing switched")

			r = runEnv(t, "fencectl", map[string]string{"FENCEKIT_STRICT": "1"}, tc.stdin)
			assert.Equal(t, 1, r.code, "FENCEKIT_STRICT=1: %+v", r)

			r = runEnv(t, "fence_fencekit", map[string]string{"FENCEKIT_STRICT": "0"}, tc.stdin)
			assert.Equal(t, tc.lax.code, r.code, "the agents' behaviour: %+v", r)
			assert.Equal(t, tc.lax.stdout, r.stdout)
		})
	}
}
