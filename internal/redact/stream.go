package redact

import (
	"bytes"
	"regexp"
	"strings"
)

// Stream redacts text written to it in pieces and passes it on. What it
// emits, joined, is what String returns for the pieces joined, however the
// text was split, and nothing is emitted that a later piece could turn into
// part of a secret.
//
// It holds back the last word and, further, text that may yet start a
// secret spanning whitespace: a Bearer with no token yet, a secret's name
// with no value yet (password: ), and an unclosed private key block. It
// cuts only after whitespace, so it never splits a UTF-8 sequence. A
// Stream is not safe for concurrent use.
type Stream struct {
	r    *Redactor
	emit func(string)
	held []byte // written and not yet emitted
	// key is the offset in held of a private key block's whole BEGIN line
	// with no END line yet, or -1. Until an END line may have come after
	// it, no more of held is safe to emit.
	key int
}

// Stream returns a Stream that passes the redacted text to emit.
func (r *Redactor) Stream(emit func(string)) *Stream {
	return &Stream{r: r, emit: emit, key: -1}
}

// spaces is RE2's \s, which the patterns use to delimit secrets.
const spaces = " \t\n\f\r"

const (
	begin = "-----BEGIN "
	end   = "-----END "
)

// Write redacts and emits as much of the text written so far as is safe.
func (s *Stream) Write(chunk string) {
	s.held = append(s.held, chunk...)
	if bytes.IndexAny(s.held, spaces) < 0 {
		return // no word has ended
	}
	if s.key >= 0 && !bytes.Contains(s.held[s.key:], []byte(end)) {
		return
	}
	c, key := cut(string(s.held))
	if s.key = key; key >= 0 {
		s.key -= c
	}
	if c > 0 {
		s.send(string(s.held[:c]))
		s.held = append(s.held[:0], s.held[c:]...)
	}
}

// Flush emits the text held back, redacted. It ends the text: what is
// written after Flush is redacted as a new text, as by a new Stream.
func (s *Stream) Flush() {
	s.send(string(s.held))
	s.held, s.key = s.held[:0], -1
}

func (s *Stream) send(raw string) {
	if out := s.r.String(raw); out != "" {
		s.emit(out)
	}
}

// maxBack bounds how many words cut steps back over; a run of secrets
// each of which may be the value of the one before is held as a whole.
const maxBack = 8

// cut returns the length of the longest prefix of s, ending in whitespace,
// that no secret can cross whatever follows, so that String(s[:c]) +
// String(rest) == String(s[:c] + rest). If s up to its last whitespace
// has a private key block with a whole BEGIN line and no END line, key is
// the offset of that line, else -1. Only Bearer, assignment and private key matches contain whitespace; the
// other patterns end within a word.
func cut(s string) (c, key int) {
	c, key = strings.LastIndexAny(s, spaces)+1, -1
	for n := 0; c > 0; n++ {
		if n == maxBack {
			return 0, key
		}
		if i := heldFrom(s, c); i >= 0 {
			c = wordStart(s, i)
		} else if i, whole := openKey(s[:c]); i >= 0 {
			if n == 0 && whole {
				key = i
			}
			c = wordStart(s, i)
		} else {
			break
		}
	}
	return c, key
}

// wordStart returns the start of the word holding s[i].
func wordStart(s string, i int) int {
	return strings.LastIndexAny(s[:i], spaces) + 1
}

var (
	// heldEnd matches the end of a text that more text may continue into a
	// secret across whitespace: a Bearer with no token, a name with no
	// value. heldNext does the same knowing the next character. Both ignore
	// \b and the masks before them, holding back a little more than needed.
	heldEnd  = regexp.MustCompile(`(?i)(?:bearer|` + secretNames + `"?\s*[:=]?)\s+$`)
	heldNext = regexp.MustCompile(`(?i)(?:bearer\s+[A-Za-z0-9._~+/\-]|` + secretNames + `"?(?:\s+[:=]|\s*[:=]\s+[^',;&]))$`)
)

// heldFrom returns where a Bearer or a secret's name starts that the text
// from s[c] on may give a value, or -1. s[c-1] is whitespace.
func heldFrom(s string, c int) int {
	re, t := heldEnd, s[:c]
	if c < len(s) {
		re, t = heldNext, s[:c+1]
	}
	// Search only the word before the whitespace (and a : or =), as far
	// back as the longest name in 3-byte runes and a quote, to keep a run
	// of names linear.
	i := len(strings.TrimRight(s[:c], spaces))
	if i > 0 && (s[i-1] == ':' || s[i-1] == '=') {
		i = len(strings.TrimRight(s[:i-1], spaces))
	}
	from := max(wordStart(s, i), i-40)
	loc := re.FindStringIndex(t[from:])
	if loc == nil {
		return -1
	}
	return from + loc[0]
}

var (
	// keyBlock matches a private key block at the start of a text,
	// keyBegin its BEGIN line and keyHead a BEGIN line still being written.
	keyBlock = regexp.MustCompile(`^(?:` + privateKey.re.String() + `)`)
	keyBegin = regexp.MustCompile(`^-----BEGIN [A-Z ]*PRIVATE KEY-----`)
	keyHead  = regexp.MustCompile(`^-----BEGIN [A-Z ]*$`)
)

// openKey returns the offset in t of a BEGIN line that more text may close
// into a private key block, or -1, and whether the line is whole, so that
// only an END line can close the block. It looks at t as privateKey sees
// it, after the tokens are masked, since a token can swallow an END line;
// masks neither make nor split a BEGIN line, so the n-th one seen there is
// at or after the n-th of t.
func openKey(t string) (int, bool) {
	if !strings.Contains(t, begin) {
		return -1, false
	}
	seen := maskTokens(t)
	for n, i := 0, 0; ; n++ {
		j := strings.Index(seen[i:], begin)
		if j < 0 {
			return -1, false
		}
		i += j
		rest := seen[i:]
		if whole := keyBegin.MatchString(rest); whole && !keyBlock.MatchString(rest) || keyHead.MatchString(rest) {
			return nthIndex(t, begin, n), whole
		}
		i += len(begin)
	}
}

// nthIndex returns the offset of the n-th (from 0) sep in s; s has it.
func nthIndex(s, sep string, n int) int {
	i := 0
	for ; n > 0; n-- {
		i += strings.Index(s[i:], sep) + len(sep)
	}
	return i + strings.Index(s[i:], sep)
}
