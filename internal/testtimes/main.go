// Command testtimes reads the events of `go test -json` on its standard
// input and writes, as it goes, the lines go test prints for each package
// (ok, FAIL, and the output of what failed), and at the end a summary: each
// package's wall time, the slowest tests, and the number of tests run,
// passed, failed and skipped, closing with the line
// "N passed, N failed, N skipped". It exits non-zero when a test or a
// package failed, or when the input held no event. scripts/test-times.sh
// runs the suite through it.
//
// A parallel test's time runs from when it resumed, not from its start:
// the pause is its parent's. A test that waits for a turn of its own (the
// lanes of cmd/fencekit-controller's tests) says so in its output, in a
// line holding "waited D for its lane" (D as time.Duration prints it);
// that wait is not its time either.
//
// With -cpu FILE it adds each package's CPU time, read from FILE, which
// "testtimes exec FILE" wrote as go test's -exec program: it runs the test
// binary and appends the processor time the binary and every process it
// started and waited for used (a package's peers: API servers, fence
// agents, simulators), which says where the cores' time goes.
//
//	go test -json ./... | go run ./internal/testtimes [-top 20]
//	go test -json -exec "testtimes exec cpu.log" ./... | testtimes -cpu cpu.log
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type result struct {
	name    string
	sub     bool // a subtest
	elapsed time.Duration
	action  string
	cpu     time.Duration // the test binary's and its children's, when known
}

type summary struct {
	packages map[string]*result
	tests    []result
	output   map[string][]string      // package/test -> output, kept until it passes
	started  map[string]time.Time     // package/test -> when it ran, or resumed
	waited   map[string]time.Duration // package/test -> its wait for its lane
	// parallelSubs: package/test -> some of its subtests are parallel
	parallelSubs map[string]bool
	passed       int
	failed       int
	skipped      int
	events       int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "exec" {
		os.Exit(execMain(os.Args[2:]))
	}
	top := flag.Int("top", 20, "how many of the slowest tests to list")
	cpuLog := flag.String("cpu", "", "the file that \"testtimes exec\" appended the test binaries' CPU times to")
	flag.Parse()
	s := &summary{packages: map[string]*result{}, output: map[string][]string{}, started: map[string]time.Time{},
		waited: map[string]time.Duration{}, parallelSubs: map[string]bool{}}
	if err := s.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(2)
	}
	if *cpuLog != "" {
		if err := s.readCPU(*cpuLog); err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
		}
	}
	s.write(os.Stdout, *top)
	if s.events == 0 {
		fmt.Fprintln(os.Stderr, "testtimes: no test event read")
		os.Exit(2)
	}
	if s.failed > 0 {
		os.Exit(1)
	}
	for _, p := range s.packages {
		if p.action == "fail" {
			os.Exit(1)
		}
	}
}

func (s *summary) read(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: the build's own output (a compile error).
			fmt.Fprintln(out, string(line))
			continue
		}
		s.events++
		key := e.Package + " " + e.Test
		switch e.Action {
		case "run", "cont":
			s.started[key] = e.Time
		case "pause":
			if i := strings.LastIndex(e.Test, "/"); i > 0 {
				s.parallelSubs[e.Package+" "+e.Test[:i]] = true
			}
		case "output":
			s.output[key] = append(s.output[key], e.Output)
			s.waited[key] += laneWait(e.Output)
		case "pass", "fail", "skip":
			// A test whose subtests are parallel returns at once and
			// ends with them: its wall time is from its run to its end.
			// Any other test's is its Elapsed (which leaves out a
			// parallel test's pause; the event of a parallel test may
			// come long after it ended).
			d := time.Duration(e.Elapsed * float64(time.Second))
			if at, ok := s.started[key]; ok && s.parallelSubs[key] && e.Time.Sub(at) > d {
				d = e.Time.Sub(at)
			}
			d = max(d-s.waited[key], 0)
			if e.Test == "" {
				s.packages[e.Package] = &result{name: e.Package, elapsed: d, action: e.Action}
				switch e.Action {
				case "fail":
					for _, o := range s.output[key] {
						fmt.Fprint(out, o)
					}
				default:
					fmt.Fprintf(out, "%-4s\t%s\t%.3fs\n", map[string]string{"pass": "ok", "skip": "?"}[e.Action], e.Package, d.Seconds())
				}
				delete(s.output, key)
				continue
			}
			s.tests = append(s.tests, result{name: e.Package + "." + e.Test, sub: strings.Contains(e.Test, "/"), elapsed: d, action: e.Action})
			if !strings.Contains(e.Test, "/") {
				switch e.Action {
				case "pass":
					s.passed++
				case "fail":
					s.failed++
				case "skip":
					s.skipped++
				}
			}
			if e.Action == "fail" {
				for _, o := range s.output[key] {
					fmt.Fprint(out, o)
				}
			}
			delete(s.output, key)
		}
	}
	return sc.Err()
}

// laneMarker precedes the wait a test reports for its lane.
const laneMarker = "waited "

// laneWait returns the wait an output line reports ("waited D for its
// lane"), or 0.
func laneWait(line string) time.Duration {
	i := strings.Index(line, laneMarker)
	if i < 0 || !strings.Contains(line[i:], " for its lane") {
		return 0
	}
	f := strings.Fields(line[i+len(laneMarker):])
	if len(f) == 0 {
		return 0
	}
	d, err := time.ParseDuration(f[0])
	if err != nil || d < 0 {
		return 0
	}
	return d
}

func (s *summary) write(out io.Writer, top int) {
	pkgs := make([]*result, 0, len(s.packages))
	for _, p := range s.packages {
		pkgs = append(pkgs, p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].elapsed > pkgs[j].elapsed })
	var cpu time.Duration
	for _, p := range pkgs {
		cpu += p.cpu
	}
	if cpu == 0 {
		fmt.Fprintf(out, "\nPackages by wall time (%d):\n", len(pkgs))
	} else {
		fmt.Fprintf(out, "\nPackages by wall time (%d), with the CPU time of the test binary and the processes it started:\n", len(pkgs))
	}
	for _, p := range pkgs {
		switch {
		case p.elapsed < time.Second:
		case cpu == 0:
			fmt.Fprintf(out, "  %8.1fs  %s\n", p.elapsed.Seconds(), p.name)
		default:
			fmt.Fprintf(out, "  %8.1fs  %8.1fs CPU  %s\n", p.elapsed.Seconds(), p.cpu.Seconds(), p.name)
		}
	}
	if cpu > 0 {
		fmt.Fprintf(out, "CPU time of the tests and their peers: %.0f s (building and linking them not counted)\n", cpu.Seconds())
	}
	var tops []result
	for _, t := range s.tests {
		if !t.sub {
			tops = append(tops, t)
		}
	}
	sort.Slice(tops, func(i, j int) bool { return tops[i].elapsed > tops[j].elapsed })
	fmt.Fprintf(out, "\nThe %d slowest tests:\n", min(top, len(tops)))
	for _, t := range tops[:min(top, len(tops))] {
		fmt.Fprintf(out, "  %8.1fs  %s\n", t.elapsed.Seconds(), t.name)
	}
	fmt.Fprintf(out, "\nTests run: %d (top-level; %d with subtests)\n", s.passed+s.failed+s.skipped, len(s.tests))
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}

// execMain runs a test binary as go test's -exec program: args are the
// CPU log's path, then the binary and its arguments. It passes the
// standard streams through, forwards the signals go test sends, appends
// "directory<TAB>user seconds<TAB>system seconds" to the log when the
// binary exits (its own time and that of every process it waited for) and
// exits as the binary did.
func execMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "testtimes exec: want the CPU log's path, then the program and its arguments")
		return 2
	}
	code, user, sys, err := runMeasured(args[1], args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes exec:", err)
		return 2
	}
	dir, _ := os.Getwd()
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s\t%.3f\t%.3f\n", dir, user.Seconds(), sys.Seconds())
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes exec:", err)
	}
	return code
}

// readCPU adds the CPU times of the log at path to the packages: a line's
// directory, relative to the module's root (this directory, where go.mod
// names the module), is its package.
func (s *summary) readCPU(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	module := ""
	if mod, err := os.ReadFile("go.mod"); err == nil {
		for _, l := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
				module = f[1]
			}
		}
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			continue
		}
		rel, err := filepath.Rel(root, f[0])
		if err != nil {
			continue
		}
		pkg := module
		if rel != "." {
			pkg = module + "/" + filepath.ToSlash(rel)
		}
		user, err1 := strconv.ParseFloat(f[1], 64)
		sys, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if p := s.packages[pkg]; p != nil {
			p.cpu += time.Duration((user + sys) * float64(time.Second))
		}
	}
	return nil
}
