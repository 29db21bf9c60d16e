package askbi_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPackageList keeps doc.go's package list whole, so a newcomer finds
// every package from the overview: each package outside internal/ is
// named in doc.go, and has a package doc whose first sentence says what
// it is ("Package x ..." or "Command x ...").
func TestPackageList(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Doc}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.SplitN(line, "\t", 3)
		pkg, name, synopsis := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/"), fields[1], fields[2]
		if pkg == "" || strings.Contains("/"+pkg+"/", "/internal/") {
			continue
		}
		if !regexp.MustCompile(`(^|[\s,(])` + regexp.QuoteMeta(pkg) + `[\s,:;.)]`).Match(doc) {
			t.Errorf("doc.go does not list %s", pkg)
		}
		if !strings.HasPrefix(synopsis, "Package "+name+" ") && !strings.HasPrefix(synopsis, "Command ") {
			t.Errorf("%s's package doc %q does not start with \"Package %s\"", pkg, synopsis, name)
		}
	}
}

// TestWiringSize keeps the reference server's package main what it is
// meant to be, wiring: at most 600 lines besides the demo (demo*.go)
// and the tests. What a host would write again belongs in the SDK.
func TestWiringSize(t *testing.T) {
	files, err := filepath.Glob("examples/refserver/*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasPrefix(base, "demo") || strings.HasSuffix(base, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines > 600 {
		t.Errorf("examples/refserver has %d lines of wiring besides demo*.go, want at most 600", lines)
	}
}
