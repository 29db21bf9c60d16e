package askbi_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks that every relative link of README.md and docs/
// names a file that exists and, with a #fragment, a heading of that file
// (GitHub's anchors), so the guide's one hop to each capability holds.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{"README.md"}, docs...)
	fence := regexp.MustCompile("(?s)```.*?```")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // https:, mailto:
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if a, err := anchors(file); err != nil {
				t.Fatal(err)
			} else if !a[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", f, target, file, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found")
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation but - and _ dropped, spaces as -, and -1,
// -2 after repeats.
func anchors(file string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out, seen, code := map[string]bool{}, map[string]int{}, false
	heading := regexp.MustCompile(`^#{1,6} (.*)`)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			code = !code
		}
		m := heading.FindStringSubmatch(line)
		if code || m == nil {
			continue
		}
		s := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(m[1]))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out, nil
}

// TestREADMEHost builds the README's minimal host as a module of its own
// against this one, so the snippet a newcomer pastes keeps compiling as
// the SDK's API moves.
func TestREADMEHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) != 2 || !strings.Contains(blocks[0][1], "func main()") {
		t.Fatalf("the README has %d go blocks; want two, the minimal host and its lines on PostgreSQL", len(blocks))
	}
	// The PostgreSQL lines are ExampleOpen's, which runs them.
	example, err := os.ReadFile("pgstore/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(blocks[1][1], "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(string(example), line) {
			t.Errorf("the README's PostgreSQL line %q is not in pgstore.ExampleOpen", line)
		}
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module readmehost\n\ngo 1.26\n\nrequire github.com/askbi/askbi v0.0.0\n\nreplace github.com/askbi/askbi => " + root + "\n"
	for name, text := range map[string]string{"go.mod": mod, "go.sum": string(sum), "main.go": blocks[0][1]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", "vet", ".")
	cmd.Dir = dir
	// The module's own dependencies are all the host needs: no download.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's minimal host does not build: %v\n%s", err, out)
	}
}
