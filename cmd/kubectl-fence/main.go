// Command kubectl-fence is a kubectl plugin: a person's view of fencekit's
// fencing, and the confirmation that a node is off when no device can prove
// it.
//
//	kubectl fence status [NODE]
//	kubectl fence confirm NODE --reason "rack B7 has no power, checked on site"
//	kubectl fence healthy NODE
//
// Install it as kubectl plugins are: put the binary on PATH under the name
// kubectl-fence (go install github.com/fencekit/fencekit/cmd/kubectl-fence@latest).
//
// confirm writes spec.confirmation of the node's NodeFence: your user name
// as the API server knows it (kubectl auth whoami), the reason, and the
// incident (status.incident). The admission policy of deploy/confirm.yaml
// admits it only from a user granted the verb confirm on nodefences
// (ClusterRole fencekit-confirm), under that user's own name; the
// controller acts on it only while the node is not Ready, for that
// incident only. confirm refuses a Ready node before it writes anything,
// then waits (--wait) for the controller's answer.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // refused, or the API server or controller said no
	exitUsage   = 2
	maxReasonSz = 1024 // the CRD's bound on spec.confirmation.reason
)

const usage = `kubectl fence: fencekit's fencing of nodes, and a person's confirmation

Usage:
  kubectl fence status [NODE] [flags]
      the NodeFences: step, status, what proves the fence (devices or a
      person), the pods; with NODE, its incident, jobs and history
  kubectl fence confirm NODE --reason TEXT [--wait DURATION] [flags]
      confirm that NODE is off (you checked: its BMC died with it), for its
      current incident: its pods are released as after a verified off
  kubectl fence healthy NODE [--wait DURATION] [flags]
      mark a recovered NODE healthy: with a negative --healthy-delay, the
      controller keeps it from taking pods (a NoSchedule taint) until then

Flags of every command: the usual kubectl flags (--kubeconfig, --context,
--as, ...).
`

// errUsage marks a usage error.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	// What the commands print comes from records others wrote (a device's
	// error, a person's reason): nothing of it reaches the terminal as a
	// control sequence.
	so, se := &termSafe{w: stdout}, &termSafe{w: stderr}
	defer so.Close()
	defer se.Close()
	stdout, stderr = so, se
	cmd, rest := args[0], args[1:]
	fs := pflag.NewFlagSet("kubectl fence "+cmd, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	kube := genericclioptions.NewConfigFlags(true)
	kube.AddFlags(fs)
	var err error
	switch cmd {
	case "status":
		err = status(ctx, fs, kube, rest, stdout)
	case "confirm":
		err = confirm(ctx, fs, kube, rest, stdout)
	case "healthy":
		err = healthy(ctx, fs, kube, rest, stdout)
	default:
		fmt.Fprintf(stderr, "kubectl fence: unknown command %q (want status, confirm or healthy)\n\n%s", cmd, usage)
		return exitUsage
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "kubectl fence %s: %v\n", cmd, err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "kubectl fence %s: %v\n", cmd, err)
	return exitFailed
}

// usageErr is a usage error with its message.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// parse parses fs over args and returns the positional arguments.
func parse(fs *pflag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, usageErr("%v", err)
	}
	return fs.Args(), nil
}

// ago says how long before now t was, for a person.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// oneLine makes s fit one line of a table.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
