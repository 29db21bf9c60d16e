// Package canonjson writes JSON in the canonical form of RFC 8785 (JSON
// Canonicalization Scheme, JCS), so that semantically equal tool arguments
// hash equally:
//
//	h, err := canonjson.Hash([]byte(`{"b": 1, "a": [1.0, "x"]}`))
//	// h is the hex SHA-256 of {"a":[1,"x"],"b":1}
//
// Object members are sorted by the UTF-16 code units of their names, there
// is no insignificant whitespace, strings carry only the escapes JCS
// mandates, and numbers are written as ECMAScript's Number.prototype.toString
// writes them.
//
// Input that JCS cannot represent, or that would make two different texts
// mean the same to some reader, is rejected rather than repaired: duplicate
// member names at any depth (also when they differ only by escapes), invalid
// UTF-8, lone surrogates in \u escapes, numbers beyond the float64 range,
// anything after the value, nesting deeper than [MaxDepth] and input longer
// than [MaxSize].
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/askbi/askbi"
)

// Limits on the input of Canonical and Hash.
const (
	// MaxSize is the largest input accepted, in bytes.
	MaxSize = 1 << 20
	// MaxDepth is the deepest nesting of arrays and objects accepted; a
	// scalar has depth 0 and [[1]] depth 2.
	MaxDepth = 64
)

// Canonical returns the RFC 8785 canonical form of the JSON text raw.
//
// Errors are *[askbi.Error]: TooLarge when raw is longer than [MaxSize] or
// nested deeper than [MaxDepth], InvalidArgument for anything that is not
// one JSON value JCS can represent. Messages give a byte offset, never the
// input's content.
func Canonical(raw []byte) ([]byte, error) {
	if len(raw) > MaxSize {
		return nil, &askbi.Error{Code: askbi.TooLarge, Op: "canonjson.Canonical",
			Message: "JSON input is larger than " + strconv.Itoa(MaxSize) + " bytes."}
	}
	p := parser{in: raw}
	p.skipSpace()
	v, err := p.value(0)
	if err == nil {
		p.skipSpace()
		if p.pos < len(p.in) {
			err = p.errorf("unexpected data after the JSON value")
		}
	}
	if err != nil {
		return nil, err
	}
	return appendValue(make([]byte, 0, len(raw)), v), nil
}

// Hash returns the hex-encoded SHA-256 of Canonical(raw), with its errors.
func Hash(raw []byte) (string, error) {
	c, err := Canonical(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// value is a parsed JSON value: nil (null), bool, float64, string, []value
// or object.
type value any

type member struct {
	name string
	key  []uint16 // name in UTF-16, the sort key
	val  value
}

type object []member

type parser struct {
	in  []byte
	pos int
}

func (p *parser) errorf(msg string) error {
	return &askbi.Error{Code: askbi.InvalidArgument, Op: "canonjson.Canonical",
		Message: "Invalid JSON at byte " + strconv.Itoa(p.pos) + ": " + msg + "."}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses one value at depth (the number of enclosing containers).
func (p *parser) value(depth int) (value, error) {
	if p.pos >= len(p.in) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return nil, &askbi.Error{Code: askbi.TooLarge, Op: "canonjson.Canonical",
				Message: "JSON input is nested deeper than " + strconv.Itoa(MaxDepth) + " levels."}
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		return p.string()
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, nil
	case p.literal("false"):
		return false, nil
	case p.literal("null"):
		return nil, nil
	}
	return nil, p.errorf("unexpected character")
}

func (p *parser) literal(word string) bool {
	if bytes.HasPrefix(p.in[p.pos:], []byte(word)) {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) object(depth int) (value, error) {
	p.pos++ // {
	obj := object{}
	seen := map[string]bool{}
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return nil, p.errorf("expected a member name")
		}
		start := p.pos
		name, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		// Names compare decoded, so "a" and "\u0061" are duplicates.
		n := name.(string)
		if seen[n] {
			p.pos = start
			return nil, p.errorf("duplicate member name")
		}
		seen[n] = true
		obj = append(obj, member{name: n, key: utf16.Encode([]rune(n)), val: v})
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.errorf("unexpected end of input")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			slices.SortFunc(obj, func(a, b member) int { return slices.Compare(a.key, b.key) })
			return obj, nil
		default:
			return nil, p.errorf("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (value, error) {
	p.pos++ // [
	arr := []value{}
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.errorf("unexpected end of input")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.errorf("expected ',' or ']'")
		}
	}
}

// string parses a string literal into its decoded text, which is always
// valid UTF-8 without surrogates.
func (p *parser) string() (value, error) {
	p.pos++ // "
	var b []byte
	for {
		if p.pos >= len(p.in) {
			return nil, p.errorf("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(b), nil
		case c < 0x20:
			return nil, p.errorf("control character in string")
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return nil, err
			}
			b = utf8.AppendRune(b, r)
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, p.errorf("invalid UTF-8")
			}
			b = append(b, p.in[p.pos:p.pos+n]...)
			p.pos += n
		}
	}
}

// escape parses one escape sequence, joining a surrogate pair.
func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.in) {
		return 0, p.errorf("unterminated string")
	}
	c := p.in[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		p.pos -= 2
		return 0, p.errorf("invalid escape")
	}
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xdc00: // high: a low one must follow
		if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
			p.pos += 2
			lo, err := p.hex4()
			if err != nil {
				return 0, err
			}
			if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
				return pair, nil
			}
		}
		return 0, p.errorf("lone surrogate in \\u escape")
	case utf16.IsSurrogate(r):
		return 0, p.errorf("lone surrogate in \\u escape")
	}
	return r, nil
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.in) {
		return 0, p.errorf("short \\u escape")
	}
	var r rune
	for _, c := range p.in[p.pos : p.pos+4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.errorf("invalid \\u escape")
		}
		r = r<<4 | rune(d)
	}
	p.pos += 4
	return r, nil
}

// number parses a number with the JSON grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *parser) number() (value, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && '0' <= p.in[p.pos] && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.in[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.in) && p.in[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(p.in[start:p.pos]), 64)
	if err != nil { // only a range error is possible after the checks above
		p.pos = start
		return nil, p.errorf("number out of range")
	}
	return f, nil
}

func appendValue(b []byte, v value) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case float64:
		return appendNumber(b, v)
	case string:
		return AppendString(b, v)
	case []value:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	case object:
		b = append(b, '{')
		for i, m := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, m.name)
			b = append(b, ':')
			b = appendValue(b, m.val)
		}
		return append(b, '}')
	}
	panic("canonjson: unexpected value type")
}

// appendNumber writes f as ECMAScript's Number::toString does (ECMA-262
// §6.1.6.1.20, JCS §3.2.2.3). f is finite.
func appendNumber(b []byte, f float64) []byte {
	if f == 0 { // also -0
		return append(b, '0')
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// The shortest digits that round-trip, as "d.ddde±x": the value is
	// 0.digits × 10^n.
	e := strconv.AppendFloat(nil, f, 'e', -1, 64)
	mark := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	digits := slices.DeleteFunc(e[:mark], func(c byte) bool { return c == '.' })
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 > 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}
