// Package transcript runs golden transcript tests, in the manner of
// etcd-io/raft's interaction tests: a file in testdata/ holds a scenario in
// a small command language of the test's own, each command followed by
// "----" and what it printed, and a blank line. Run the test with -rewrite
// to write what the commands print now into the files, then review the
// diff.
//
// Lines that are blank or start with '#' before a command are comments and
// are kept as they are.
package transcript

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden transcripts in testdata/ with what the commands print now")

// Runner runs one command of a scenario and returns what it printed, one
// line an element; an error stops the transcript.
type Runner func(cmd string) ([]string, error)

// RunDir runs every testdata/*.txt transcript as a subtest, each with a
// fresh Runner from newRunner.
func RunDir(t *testing.T, newRunner func(t *testing.T) Runner) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcript in testdata/*.txt")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { Run(t, f, newRunner(t)) })
	}
}

// block is one command of a transcript with what precedes it.
type block struct {
	pre  []string // comment and blank lines before the command
	cmd  string
	line int // the command's line number, from 1
	want []string
}

func parse(text string) (blocks []block, trailing []string) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var pre []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			i++
			continue
		}
		b := block{pre: pre, cmd: l, line: i + 1}
		pre = nil
		i++
		if i < len(lines) && lines[i] == "----" {
			i++
			for i < len(lines) && lines[i] != "" {
				b.want = append(b.want, lines[i])
				i++
			}
			if i < len(lines) { // the blank line that ends the output
				i++
			}
		}
		blocks = append(blocks, b)
	}
	return blocks, pre
}

// Run runs the transcript in file with run, and fails t where a command
// printed other than the file says (or, with -rewrite, writes the file
// anew).
func Run(t *testing.T, file string, run Runner) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks, trailing := parse(string(raw))
	var out []string
	for i := range blocks {
		b := &blocks[i]
		got, err := run(b.cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, b.line, b.cmd, err)
		}
		pre := b.pre
		for len(pre) > 0 && pre[0] == "" && len(out) > 0 {
			pre = pre[1:] // the blank line after the previous output stands for these
		}
		out = append(out, pre...)
		out = append(out, b.cmd, "----")
		out = append(out, got...)
		out = append(out, "")
		if !*rewrite && !slices.Equal(got, b.want) {
			t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", file, b.line, b.cmd, strings.Join(b.want, "\n"), strings.Join(got, "\n"))
		}
	}
	out = append(out, trailing...)
	text := strings.Join(out, "\n")
	if *rewrite && text != string(raw) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", file)
	}
}
