package snmpsim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The pass_persist handler is the test binary itself: snmpd runs it as
// "BINARY snmpsim-passpersist MODEL DIR OUTLETS", and this package's init
// serves the pass_persist protocol on standard input and output instead of
// running the tests. So a simulator needs no program of its own, nor a
// build.
const passPersistArg = "snmpsim-passpersist"

func init() {
	if len(os.Args) > 1 && os.Args[1] == passPersistArg {
		os.Exit(passPersistMain(os.Args[2:], os.Stdin, os.Stdout))
	}
}

// passPersistMain runs the handler; it returns the exit status.
func passPersistMain(args []string, in io.Reader, out io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: snmpsim-passpersist MODEL DIR OUTLETS")
		return 2
	}
	m, ok := modelByName(args[0])
	n, err := strconv.Atoi(args[2])
	if !ok || err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "snmpsim-passpersist: bad model or outlet count")
		return 2
	}
	h := &handler{spec: specs[m], dir: args[1], n: n}
	if err := h.serve(in, out); err != nil {
		fmt.Fprintln(os.Stderr, "snmpsim-passpersist:", err)
		return 1
	}
	return 0
}

// handler serves one model's objects from the state file.
type handler struct {
	spec spec
	dir  string
	n    int
}

// serve answers snmpd's requests until standard input ends: PING, get,
// getnext and set, as net-snmp's pass_persist sends them.
func (h *handler) serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	line := func() (string, error) {
		s, err := r.ReadString('\n')
		if err != nil && (s == "" || err != io.EOF) {
			return "", err
		}
		return strings.TrimRight(s, "\r\n"), nil
	}
	reply := func(lines ...string) error {
		for _, l := range lines {
			w.WriteString(l)
			w.WriteByte('\n')
		}
		return w.Flush()
	}
	for {
		cmd, err := line()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch strings.ToLower(strings.TrimSpace(cmd)) {
		case "":
			continue
		case "ping":
			err = reply("PONG")
		case "get", "getnext":
			var oidLine string
			if oidLine, err = line(); err != nil {
				return err
			}
			err = reply(h.get(oidLine, strings.EqualFold(strings.TrimSpace(cmd), "getnext"))...)
		case "set":
			var oidLine, tv string
			if oidLine, err = line(); err != nil {
				return err
			}
			if tv, err = line(); err != nil {
				return err
			}
			err = reply(h.set(oidLine, tv))
		default:
			err = reply("NONE")
		}
		if err != nil {
			return err
		}
	}
}

// objects returns the model's objects, sorted, for the current state.
func (h *handler) objects() []object {
	st, err := readState(h.dir)
	if err != nil {
		st = newState(h.n, nil, h.spec.names)
	}
	objs := h.spec.objects(st, h.n)
	slices.SortFunc(objs, func(a, b object) int { return slices.Compare(a.oid, b.oid) })
	return objs
}

// get answers a get (the object itself) or a getnext (the first object
// after it).
func (h *handler) get(oidLine string, next bool) []string {
	oid, ok := parseOID(oidLine)
	if !ok {
		return []string{"NONE"}
	}
	for _, o := range h.objects() {
		c := slices.Compare(o.oid, oid)
		if (!next && c == 0) || (next && c > 0) {
			return []string{formatOID(o.oid), o.typ, o.val}
		}
	}
	return []string{"NONE"}
}

// set applies a set, and answers DONE or a pass_persist error keyword.
func (h *handler) set(oidLine, typeValue string) string {
	oid, ok := parseOID(oidLine)
	if !ok {
		return "not-writable"
	}
	typ, val, _ := strings.Cut(strings.TrimSpace(typeValue), " ")
	var answer string
	var delay time.Duration
	err := update(h.dir, func(st *state) bool {
		v, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
		switch {
		case !strings.EqualFold(typ, "integer"):
			answer = "wrong-type"
		case err != nil:
			answer = "wrong-value"
		default:
			answer = h.spec.write(st, h.n, oid, v)
		}
		st.SetCount++
		st.sets = append(st.sets, SetRequest{OID: formatOID(oid), Value: v, Error: answer, At: time.Now()})
		delay = time.Duration(st.SetDelayMS) * time.Millisecond
		return true
	})
	if err != nil {
		return "commit-failed"
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if answer == "" {
		return "DONE"
	}
	return answer
}

// parseOID reads a numeric OID, with or without its leading dot.
func parseOID(s string) ([]int, bool) {
	s = strings.Trim(strings.TrimSpace(s), ".")
	if s == "" {
		return nil, false
	}
	parts := strings.Split(s, ".")
	oid := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, false
		}
		oid[i] = n
	}
	return oid, true
}

func formatOID(oid []int) string {
	var b strings.Builder
	for _, n := range oid {
		b.WriteByte('.')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
