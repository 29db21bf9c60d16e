package askbi_test

import (
	"fmt"
	"os"
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
