package fence_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine imports the standard library and the module's two leaves
// (the error formatter and the context-aware sleep), which import the
// standard library only: a program that embeds a driver builds no YAML,
// no client library and no other package of the module through fence.
func TestImportsStayLeaves(t *testing.T) {
	const module = "github.com/fencekit/fencekit/"
	leaves := map[string]string{
		module + "internal/errfmt":   filepath.Join("..", "internal", "errfmt"),
		module + "internal/ctxsleep": filepath.Join("..", "internal", "ctxsleep"),
	}
	check := func(dir string, allowed map[string]string) {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				first, _, _ := strings.Cut(path, "/")
				if _, ok := allowed[path]; ok || !strings.Contains(first, ".") {
					continue
				}
				t.Errorf("%s imports %s: outside the standard library and %v", f, path, keys(allowed))
			}
		}
	}
	check(".", leaves)
	for _, dir := range leaves {
		check(dir, nil)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
