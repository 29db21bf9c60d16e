// Package sqlcell holds what the SQL sources (dataexec/pgsource,
// dataexec/mysqlsource) measure, read and say alike: the JSON size of a
// text cell, where a quoted region or a line comment of SQL text ends,
// and the limits in the words users read.
package sqlcell

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// StringSize estimates the length of s as a JSON string, as encoding/json
// writes it (quotes, escapes, HTML-safe).
func StringSize(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"', c == '\\', c == '\n', c == '\r', c == '\t':
				n++
			case c < 0x20, c == '<', c == '>', c == '&':
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte becomes \ufffd
		case r == '\u2028', r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}

// Duration writes d in seconds for users: "15s", "1.5s".
func Duration(d time.Duration) string {
	return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64) + "s"
}

// Bytes writes n for users: "1 MiB", "512 KiB", "300 bytes".
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// QuotedEnd returns the index after the quote closing the region that
// the quote s[i] opens (a doubled quote is part of the region; with
// escapes, a backslash escapes the next byte), or len(s) when it never
// closes.
func QuotedEnd(s string, i int, escapes bool) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if escapes {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// LineEnd returns the index after the newline ending the line comment
// that starts at i, or len(s).
func LineEnd(s string, i int) int {
	if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
		return i + n + 1
	}
	return len(s)
}
