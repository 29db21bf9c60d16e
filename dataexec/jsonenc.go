package dataexec

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/askbi/askbi/internal/canonjson"
)

// AppendRowsJSON appends rows to dst as a JSON array of arrays: exactly
// the bytes json.Marshal(rows) writes (HTML-safe escapes, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped, floats as encoding/json formats them),
// and the same error cases (NaN and ±Inf: *json.UnsupportedValueError; an
// invalid json.Number: an error). On error it returns dst cut back to its
// original length.
//
// The cells of a Result (nil, bool, int64, float64, json.Number, string)
// take a path without reflection; any other cell, such as a nested
// map[string]any or []any, is encoded by json.Marshal on its own.
func AppendRowsJSON(dst []byte, rows [][]any) ([]byte, error) {
	if rows == nil {
		return append(dst, "null"...), nil
	}
	start := len(dst)
	dst = append(dst, '[')
	for i, row := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		if row == nil {
			dst = append(dst, "null"...)
			continue
		}
		dst = append(dst, '[')
		for j, cell := range row {
			if j > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendCellJSON(dst, cell); err != nil {
				return dst[:start], err
			}
		}
		dst = append(dst, ']')
		if i == 0 {
			// The rows of a result are alike: size dst for all of them from
			// the first, up to the executor's default result cap so that
			// one wide first row cannot make it reserve far more.
			dst = slices.Grow(dst, min((len(dst)-start+1)*(len(rows)-1), 1<<20))
		}
	}
	return append(dst, ']'), nil
}

func appendCellJSON(dst []byte, cell any) ([]byte, error) {
	switch v := cell.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return canonjson.AppendMarshaledString(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case float64:
		return appendFloatJSON(dst, v)
	case json.Number:
		s := string(v)
		if s == "" {
			s = "0" // encoding/json writes the zero Number as 0
		}
		if !isValidNumber(s) {
			return dst, fmt.Errorf("json: invalid number literal %q", s)
		}
		return append(dst, s...), nil
	}
	b, err := json.Marshal(cell)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendFloatJSON formats f as encoding/json's floatEncoder does for 64-bit
// floats: like ES6 number to string, 'e' only outside [1e-6, 1e21).
func appendFloatJSON(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// isValidNumber reports whether s is a JSON number (RFC 8259 section 6),
// as encoding/json checks a json.Number before writing it.
func isValidNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	// An integer part: 0, or a digit 1-9 and any digits.
	switch {
	case s == "":
		return false
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = skipDigits(s[1:])
	default:
		return false
	}
	// A fraction: a dot and at least one digit.
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		s = skipDigits(s[2:])
	}
	// An exponent: e or E, an optional sign, at least one digit.
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
		}
		if s == "" || !isDigit(s[0]) {
			return false
		}
		s = skipDigits(s)
	}
	return s == ""
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func skipDigits(s string) string {
	for s != "" && isDigit(s[0]) {
		s = s[1:]
	}
	return s
}
