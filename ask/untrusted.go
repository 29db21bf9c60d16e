package ask

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The model reads untrusted text (tool output, remote results, memory,
// selected items' names, attached files, a quoted question) inside
// delimited blocks, and is told that what is inside is data. A text that
// could close its own block, or open another, would escape that: so every
// untrusted text passes neutralize before it is put in a block, whatever
// block it is.

// blockTags are the tags of the blocks the model is told about, each
// word apart so that any separator (or none) between them matches.
var blockTags = []string{"attached file", "tool output", "selected items", "user memory", "continue request", "request context"}

// marker matches the opening of any block tag, closing or not, in a
// folded text (see fold): an angle bracket or a look-alike, or one
// written as an HTML entity or a JSON or C escape; then an optional
// slash, in the same spellings; then the tag, its words joined by
// spaces, underscores, hyphens or nothing. What follows the tag does not
// matter: "</user_memory >" and "</user_memory foo>" both close.
var marker = regexp.MustCompile(`(?i)(?:<|\x{2039}|\x{2329}|\x{27E8}|\x{3008}|&lt;?|&#0*60;?|&#x0*3c;?|\\u003c|\\x3c)` +
	`\s*(?:/|\\/|&#0*47;?|&#x0*2f;?|\\u002f)?\s*(?:` + tagPattern() + `)`)

func tagPattern() string {
	alts := make([]string, len(blockTags))
	for i, t := range blockTags {
		alts[i] = strings.ReplaceAll(t, " ", `[\s_-]*`)
	}
	return strings.Join(alts, "|")
}

// markerStarts are the runes a marker can start with once folded, and
// those that fold to one (NFKC maps U+FE64 and U+FF1C to "<", U+FE60 and
// U+FF06 to "&", U+FE68 and U+FF3C to a backslash; TestMarkerStarts
// checks every rune). A text holding none of them holds no marker and
// skips the folding and the expression.
const markerStarts = "<&\\\uFE60\uFE64\uFE68\uFF06\uFF1C\uFF3C\u2039\u2329\u27E8\u3008"

// neutralize returns s without any block marker (see marker), matched
// on s folded: format characters (zero-width spaces and joiners, bidi
// controls, soft hyphens) removed, every Unicode space read as a space,
// every rune in its NFKC form, and case folded. What is removed is the
// marker as written in s, so the rest of s is kept byte for byte: a JSON
// document stays JSON. Removal repeats until none is left, so that
// removing one cannot join the text around it into a new one.
func neutralize(s string) string {
	for strings.ContainsAny(s, markerStarts) {
		folded, start, end := fold(s)
		locs := marker.FindAllStringIndex(folded, -1)
		if locs == nil {
			return s
		}
		var b strings.Builder
		prev := 0
		for _, l := range locs {
			b.WriteString(s[prev:start[l[0]]])
			prev = end[l[1]-1]
		}
		b.WriteString(s[prev:])
		s = b.String()
	}
	return s
}

// fold is s as marker matches it, and for each of its bytes the byte
// offsets in s of the start and end of the rune it came from. A removed
// format character belongs to the span of the marker around it.
func fold(s string) (folded string, start, end []int) {
	var b strings.Builder
	start, end = make([]int, 0, len(s)), make([]int, 0, len(s))
	for off := 0; off < len(s); {
		r, size := utf8.DecodeRuneInString(s[off:])
		at := off
		off += size
		var out string
		switch {
		case unicode.Is(unicode.Cf, r):
			continue
		case unicode.IsSpace(r):
			out = " "
		case r < utf8.RuneSelf:
			out = string(r)
		default:
			out = norm.NFKC.String(string(r))
		}
		b.WriteString(out)
		for range len(out) {
			start, end = append(start, at), append(end, at+size)
		}
	}
	return b.String(), start, end
}
