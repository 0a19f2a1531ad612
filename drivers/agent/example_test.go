package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fencekit/fencekit/drivers/agent"
	"github.com/fencekit/fencekit/fence"
)

// A verified off and on through the ClusterLabs agent fence_dummy, which
// keeps its state in a file. (It needs fence-agents installed, so it has
// no checked output.)
func Example() {
	dir, err := os.MkdirTemp("", "fence-dummy")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	dev, err := agent.New(ctx, agent.Options{
		Path:   "fence_dummy",
		Params: fence.NewParams("type", "file", "status_file", filepath.Join(dir, "status")),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	m := &fence.Method{Name: "dummy", Node: "worker-3", Driver: "agent", Device: dev.View(),
		Options: fence.Options{PowerTimeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}}
	res, err := fence.Do(ctx, m, fence.ActionOff)
	fmt.Println("error:", err, "fenced:", res.Fenced())
	res, err = fence.Do(ctx, m, fence.ActionOn)
	fmt.Println("error:", err, "state:", res.State)
}

// Any program that speaks the agents' protocol is an agent: it describes
// itself with -o metadata, reads its options as name=value lines on
// standard input, prints "Status: ON" (exit status 0) or "Status: OFF"
// (exit status 2), and "Success: ..." after acting. This one is a shell
// script that keeps its state in a file.
func Example_script() {
	dir, err := os.MkdirTemp("", "fence-script")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	script := `#!/bin/sh
if [ "$1" = "-o" ] && [ "$2" = "metadata" ]; then
	cat <<'XML'
<?xml version="1.0" ?>
<resource-agent name="fence_script" shortdesc="A fence agent in a shell script">
<parameters>
	<parameter name="action" required="1"><content type="string" default="reboot" /></parameter>
	<parameter name="state_file" required="1"><content type="string" /></parameter>
	<parameter name="password" required="1"><content type="string" /></parameter>
</parameters>
<actions><action name="on" /><action name="off" /><action name="status" /><action name="monitor" /></actions>
</resource-agent>
XML
	exit 0
fi
while IFS='=' read -r k v; do
	case "$k" in
	action) action="$v" ;;
	state_file) file="$v" ;;
	password) password="$v" ;;
	esac
done
if [ "$password" != "s3cret-pass" ]; then
	echo "ERROR: Failed: password $password refused" >&2
	exit 1
fi
case "$action" in
on|off) echo "$action" > "$file"; echo "Success: Powered $action" ;;
status) if [ "$(cat "$file" 2>/dev/null)" = on ]; then echo "Status: ON"; else echo "Status: OFF"; exit 2; fi ;;
monitor) ;;
esac
`
	path := filepath.Join(dir, "fence_script")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	open := func(password string) *fence.Method {
		dev, err := agent.New(ctx, agent.Options{Path: path,
			Params: fence.NewParams("state_file", filepath.Join(dir, "state"), "password", password)})
		if err != nil {
			fmt.Println(err)
			return nil
		}
		return &fence.Method{Name: "script", Node: "worker-3", Driver: "agent", Device: dev.View(),
			Options: fence.Options{PowerTimeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}}
	}
	m := open("s3cret-pass")
	defer agent.Unwrap(m.Device).Close()
	res, err := fence.Do(ctx, m, fence.ActionOff)
	fmt.Println("error:", err, "fenced:", res.Fenced())

	_, err = agent.New(ctx, agent.Options{Path: path, Params: fence.NewParams("state_file", "x", "password", "p", "community", "public")})
	fmt.Println(err)

	bad := open("not-the-pass")
	defer agent.Unwrap(bad.Device).Close()
	_, err = fence.Do(ctx, bad, fence.ActionOn)
	fmt.Println(err)
	// Output:
	// error: <nil> fenced: true
	// parameter community: fence_script has no such parameter
	// fence: node worker-3, method script, driver agent: on: status: agent fence_script: status: exit status 1: agent failed; agent said: Failed: password REDACTED refused (surely not done)
}
