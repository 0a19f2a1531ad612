package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/config"
)

// validateUsage is the help of fencectl validate.
const validateUsage = `Usage: fencectl validate FILE...

Checks the fence configuration held in the ConfigMaps of the files (YAML or
JSON, as kubectl get configmaps -o yaml prints them; - for standard input)
against fencekit's drivers, and reports every problem at once, one a line,
each naming the ConfigMap, line and key at fault: unknown keys (with the
nearest known one), parameters a driver requires, values out of range,
SNMPv3 settings without snmp_version=3, methods no node can find, malformed
Secret references (password_secret=NAME/KEY). No device is contacted and
no Secret is read. Exit status 0 when the configuration is good, 1 when it
has problems, 2 on a usage error.
`

// validateConfig runs fencectl validate: args are the files.
func (c *cli) validateConfig(args []string, stdin io.Reader) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		out := c.stdout
		code := 0
		if len(args) == 0 {
			out, code = c.stderr, 2
		}
		io.WriteString(out, validateUsage)
		return code
	}
	var cms []config.ConfigMap
	for _, name := range args {
		var data []byte
		var err error
		if name == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "fencectl validate: %v\n", err)
			return 2
		}
		got, err := config.LoadConfigMaps(bytes.NewReader(data))
		if err != nil {
			fmt.Fprintf(c.stderr, "fencectl validate: %s: %v\n", name, err)
			return 1
		}
		cms = append(cms, got...)
	}
	if !slices.ContainsFunc(cms, func(cm config.ConfigMap) bool { return strings.HasPrefix(cm.Name, "fence-") }) {
		fmt.Fprintf(c.stdout, "fence configuration invalid: no fence ConfigMap (fence-config-*, fence-method-*, fence-method-template-*) in %s\n", strings.Join(args, ", "))
		return 1
	}
	cfg, err := config.ParseFor(cms, c.reg)
	if err == nil {
		fmt.Fprintf(c.stdout, "fence configuration valid: %d ConfigMaps, %d nodes\n", len(cms), len(cfg.Nodes()))
		return 0
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fmt.Fprintln(c.stdout, e)
	}
	n := 0
	for _, e := range errs {
		if errors.Is(e, fence.ErrConfig) {
			n++
		}
	}
	word := "problems"
	if n == 1 {
		word = "problem"
	}
	fmt.Fprintf(c.stdout, "fence configuration invalid: %d %s; %d of its nodes are fenced as configured, the others not at all\n", n, word, len(cfg.Nodes()))
	return 1
}
