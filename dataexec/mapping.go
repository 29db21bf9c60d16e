package dataexec

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

// Limits on output field definitions.
const (
	maxFields    = 100
	maxPathLen   = 16
	maxNameLen   = 128
	nameLimitMsg = "must be 1 to 128 printable characters"
)

// validateFields checks field definitions before anything runs. Errors are
// InvalidArgument naming the field.
func validateFields(fs workspace.Fields) error {
	if len(fs) > maxFields {
		return askbi.Errorf(askbi.InvalidArgument, "fields: at most %d fields", maxFields)
	}
	seen := make(map[string]bool, len(fs))
	for _, f := range fs {
		if !validName(f.Name) {
			return askbi.Errorf(askbi.InvalidArgument, "fields: a field name %s", nameLimitMsg)
		}
		if seen[f.Name] {
			return askbi.Errorf(askbi.InvalidArgument, "fields: field %s appears twice", f.Name)
		}
		seen[f.Name] = true
		if len(f.Path) == 0 || len(f.Path) > maxPathLen {
			return askbi.Errorf(askbi.InvalidArgument, "fields: field %s: the path must have 1 to %d elements", f.Name, maxPathLen)
		}
		for _, el := range f.Path {
			if !validName(el) {
				return askbi.Errorf(askbi.InvalidArgument, "fields: field %s: each path element %s", f.Name, nameLimitMsg)
			}
		}
	}
	return nil
}

// validName reports whether s is 1 to maxNameLen printable characters.
func validName(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > maxNameLen || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// mapTable applies output fields to a source table, once per fresh request.
//
// With fields, each mapped cell is the value at the field's path: the
// first element names a column (exactly, or column_N for the Nth column
// from zero when no column has that name), later elements are object keys
// or array indexes into the cell's JSON (a string cell holding a JSON
// object or array is decoded first). A missing path, or an object or array
// as the final value, is InvalidResult naming the field.
//
// Without fields the columns pass through, and a cell holding an object or
// an array is InvalidResult too (a dataset's cells are scalars) unless
// allowNested is set, which only exploration previews use so an agent can
// see the shape it must write paths for.
//
// Zero and null are kept. Cells are normalized to nil, bool, int64,
// float64, json.Number or string: times become "YYYY-MM-DD" at midnight
// UTC and RFC 3339 otherwise, and the non-finite floats become the strings
// "NaN", "Infinity" and "-Infinity" (JSON has no such numbers).
func mapTable(t *Table, fields workspace.Fields, allowNested bool) (columns []string, rows [][]any, err error) {
	if len(fields) == 0 {
		rows = make([][]any, len(t.Rows))
		width := len(t.Columns)
		cells := make([]any, len(t.Rows)*width) // one allocation for all rows
		for i, row := range t.Rows {
			out := cells[i*width : (i+1)*width : (i+1)*width]
			for j := range t.Columns {
				var v any
				if j < len(row) {
					v = row[j]
				}
				n, kind := normalizeCell(v)
				switch {
				case kind == cellNested && allowNested:
					n = v
				case kind == cellNested:
					return nil, nil, askbi.Errorf(askbi.InvalidResult, "column %s holds objects or arrays; add output fields that select values inside it", t.Columns[j])
				case kind == cellUnsupported:
					return nil, nil, askbi.Errorf(askbi.InvalidResult, "column %s holds a value of an unsupported type", t.Columns[j])
				}
				out[j] = n
			}
			rows[i] = out
		}
		return t.Columns, rows, nil
	}

	cols := make([]int, len(fields))
	for i, f := range fields {
		if cols[i] = columnIndex(t.Columns, f.Path[0]); cols[i] < 0 {
			return nil, nil, missingField("field %s: path %s not found; the result has no column %s", f.Name, strings.Join(f.Path, "."), f.Path[0])
		}
	}
	rows = make([][]any, len(t.Rows))
	decoded := make(map[int]any)
	for i, row := range t.Rows {
		clear(decoded)
		out := make([]any, len(fields))
		for j, f := range fields {
			v, ok := walk(row, cols[j], f.Path[1:], decoded)
			path := strings.Join(f.Path, ".")
			if !ok {
				return nil, nil, missingField("field %s: path %s not found in row %d", f.Name, path, i+1)
			}
			n, kind := normalizeCell(v)
			switch kind {
			case cellNested:
				what, fix := "an object", "extend the path to a value inside it"
				if _, isArray := v.([]any); isArray {
					what, fix = "an array", "extend the path with an index"
				}
				return nil, nil, askbi.Errorf(askbi.InvalidResult, "field %s: path %s selects %s in row %d; %s", f.Name, path, what, i+1, fix)
			case cellUnsupported:
				return nil, nil, askbi.Errorf(askbi.InvalidResult, "field %s: path %s selects a value of an unsupported type", f.Name, path)
			}
			out[j] = n
		}
		rows[i] = out
	}
	return fields.Names(), rows, nil
}

// columnIndex finds column name, or column_N; -1 when neither exists.
func columnIndex(columns []string, name string) int {
	for i, c := range columns {
		if c == name {
			return i
		}
	}
	if rest, ok := strings.CutPrefix(name, "column_"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 && n < len(columns) && strconv.Itoa(n) == rest {
			return n
		}
	}
	return -1
}

// walk follows path from row[col]. decoded memoizes string cells decoded
// as JSON, per row.
func walk(row []any, col int, path []string, decoded map[int]any) (any, bool) {
	if col < 0 || col >= len(row) {
		return nil, false
	}
	v := row[col]
	if len(path) == 0 {
		return v, true
	}
	if s, ok := v.(string); ok {
		d, seen := decoded[col]
		if !seen {
			d = decodeJSONText(s)
			decoded[col] = d
		}
		v = d
	}
	for _, el := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[el]; !ok {
				return nil, false
			}
		case []any:
			n, err := strconv.Atoi(el)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false
			}
			v = x[n]
		default:
			return nil, false
		}
	}
	return v, true
}

// decodeJSONText decodes s when it holds a JSON object or array, and
// returns nil otherwise.
func decodeJSONText(s string) any {
	s = strings.TrimSpace(s)
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil
	}
	return v
}

type cellKind int

const (
	cellScalar cellKind = iota
	cellNested
	cellUnsupported
)

// normalizeCell returns v as a JSON-safe scalar (see mapTable).
func normalizeCell(v any) (any, cellKind) {
	switch x := v.(type) {
	case nil, bool, string, int64, json.Number:
		return x, cellScalar
	case float64:
		return normalizeFloat(x), cellScalar
	case float32:
		return normalizeFloat(float64(x)), cellScalar
	case int:
		return int64(x), cellScalar
	case int32:
		return int64(x), cellScalar
	case int16:
		return int64(x), cellScalar
	case int8:
		return int64(x), cellScalar
	case uint32:
		return int64(x), cellScalar
	case uint16:
		return int64(x), cellScalar
	case uint8:
		return int64(x), cellScalar
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), cellScalar
	case uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), cellScalar
	case time.Time:
		return formatTime(x), cellScalar
	case []byte:
		return string(x), cellScalar
	case map[string]any, []any:
		return v, cellNested
	}
	return nil, cellUnsupported
}

func normalizeFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// formatTime writes t in UTC, as a date when it is midnight.
func formatTime(t time.Time) string {
	t = t.UTC()
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339Nano)
}

// rowSize estimates the JSON size of a row written as an array, with a
// separating comma.
func rowSize(row []any) int64 {
	n := int64(2 + len(row))
	for _, v := range row {
		n += valueSize(v)
	}
	return n
}

// valueSize estimates the JSON size of v as encoding/json writes it.
func valueSize(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return stringSize(x)
	case json.Number:
		return int64(len(x))
	case int64:
		var buf [20]byte
		return int64(len(strconv.AppendInt(buf[:0], x, 10)))
	case float64:
		return 24
	case time.Time:
		return 37
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			n += stringSize(k) + 2 + valueSize(e)
		}
		return n
	case []any:
		n := int64(2 + len(x))
		for _, e := range x {
			n += valueSize(e)
		}
		return n
	case []string:
		n := int64(2 + len(x))
		for _, e := range x {
			n += stringSize(e)
		}
		return n
	}
	return 24
}

// stringSize is the size of s as a JSON string, counting the escapes
// encoding/json writes (including its HTML escapes).
func stringSize(s string) int64 {
	n := int64(len(s) + 2)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n
}

// missingField is the InvalidResult of a field path that selects nothing,
// marked so FailureOf tells it from other invalid results.
func missingField(format string, args ...any) error {
	e := askbi.Errorf(askbi.InvalidResult, format, args...)
	return &askbi.Error{Code: askbi.InvalidResult, Message: askbi.ErrorMessage(e), Err: errMissingField}
}
