// Package sqlcell holds what the SQL sources (dataexec/pgsource,
// dataexec/mysqlsource) measure and say alike: the JSON size of a text
// cell, and the limits in the words users read.
package sqlcell

import (
	"fmt"
	"math"
	"strconv"
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
