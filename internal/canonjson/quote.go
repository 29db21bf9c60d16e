package canonjson

import "unicode/utf8"

// AppendString appends s to b as a JSON string with the escapes of JCS
// §3.2.2.2 (those of ECMAScript's JSON.stringify): \" \\ \b \f \n \r \t,
// \u00xx in lower-case hex for the other control characters, everything
// else as is. s is valid UTF-8 (Canonical rejects anything else).
func AppendString(b []byte, s string) []byte { return appendQuoted(b, s, &jcsSafe) }

// AppendMarshaledString appends s to b exactly as json.Marshal(s) writes
// it, with HTML escaping on: the escapes of [AppendString], \u00xx for < >
// and &, \ufffd for each invalid UTF-8 byte, and \u2028, \u2029.
func AppendMarshaledString(b []byte, s string) []byte { return appendQuoted(b, s, &marshalSafe) }

const hexDigits = "0123456789abcdef"

// jcsSafe and marshalSafe hold the bytes a string holds as they are: not a
// control byte, " or \; for marshalSafe also ASCII and not < > or &, so that
// the bytes of multi-byte runes are decoded.
var jcsSafe, marshalSafe = func() (jcs, marshal [256]bool) {
	for b := 0x20; b < 256; b++ {
		jcs[b] = b != '"' && b != '\\'
		marshal[b] = jcs[b] && b < utf8.RuneSelf && b != '<' && b != '>' && b != '&'
	}
	return jcs, marshal
}()

// appendQuoted is the one JSON string writer: bytes safe says are kept,
// other ASCII bytes are escaped, and other bytes (only with marshalSafe)
// are decoded as runes.
func appendQuoted(b []byte, s string, safe *[256]bool) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is pending, needing no escape
	for i := 0; i < len(s); {
		c := s[i]
		if safe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue // kept: part of the pending run
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
