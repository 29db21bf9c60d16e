package dataexec

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

// Limits on filters.
const (
	maxFilters  = 20
	maxInValues = 100
)

// numericRe is the text a number-like string cell or value must match.
var numericRe = regexp.MustCompile(`^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$`)

// validateFilters checks filters before anything runs. columns, when not
// nil, are the known output fields; otherwise field names are checked
// against the result by applyFilters. Errors are InvalidArgument naming the
// filter.
func validateFilters(fs []workspace.Filter, columns []string) error {
	if len(fs) > maxFilters {
		return askbi.Errorf(askbi.InvalidArgument, "filters: at most %d filters", maxFilters)
	}
	for i, f := range fs {
		// Named by path, as the schema's own messages are:
		// "filters[0].value (signups): must be a number or string".
		bad := func(key, format string, args ...any) error {
			at := fmt.Sprintf("filters[%d].%s", i, key)
			if key != "field" {
				at += " (" + safeField(f.Field) + ")"
			}
			return askbi.Errorf(askbi.InvalidArgument, "%s: %s", at, fmt.Sprintf(format, args...))
		}
		if !validName(f.Field) {
			return bad("field", "%s", nameLimitMsg)
		}
		if columns != nil && !slices.Contains(columns, f.Field) {
			return bad("field", "unknown field %s", safeName(f.Field))
		}
		switch f.Op {
		case workspace.OpEq, workspace.OpNe:
			if !isScalar(f.Value) {
				return bad("value", "must be a number, string, boolean or null")
			}
		case workspace.OpGt, workspace.OpGte, workspace.OpLt, workspace.OpLte:
			if _, ok := f.Value.(bool); ok || f.Value == nil || !isScalar(f.Value) {
				return bad("value", "must be a number or string")
			}
		case workspace.OpContains:
			if s, ok := f.Value.(string); !ok || s == "" {
				return bad("value", "must be a non-empty string")
			}
		case workspace.OpIn:
			list, ok := inValues(f.Value)
			if !ok || len(list) == 0 || len(list) > maxInValues {
				return bad("value", "must be an array of 1 to %d numbers, strings, booleans or nulls", maxInValues)
			}
		default:
			return bad("op", "unknown op %s; use eq, ne, gt, gte, lt, lte, contains or in", safeName(string(f.Op)))
		}
		if strValueTooLong(f.Value) {
			return bad("value", "longer than %d characters", maxStringValue)
		}
	}
	return nil
}

// safeField quotes a filter's field for a message when it is not a valid
// name.
func safeField(s string) string {
	if validName(s) {
		return s
	}
	return safeName(s)
}

func isScalar(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, json.Number, int, int64:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return false
}

func inValues(v any) ([]any, bool) {
	var list []any
	switch x := v.(type) {
	case []any:
		list = x
	case []string:
		for _, s := range x {
			list = append(list, s)
		}
	default:
		return nil, false
	}
	for _, e := range list {
		if !isScalar(e) {
			return nil, false
		}
	}
	return list, true
}

func strValueTooLong(v any) bool {
	if s, ok := v.(string); ok {
		return utf8.RuneCountInString(s) > maxStringValue
	}
	list, _ := inValues(v)
	return slices.ContainsFunc(list, strValueTooLong)
}

// applyFilters returns the rows that pass every filter. A field that is
// not a column is InvalidArgument naming the filter.
func applyFilters(fs []workspace.Filter, columns []string, rows [][]any) ([][]any, error) {
	if len(fs) == 0 {
		return rows, nil
	}
	cols := make([]int, len(fs))
	for i, f := range fs {
		if cols[i] = slices.Index(columns, f.Field); cols[i] < 0 {
			return nil, askbi.Errorf(askbi.InvalidArgument, "filters[%d].field: unknown field %s", i, safeName(f.Field))
		}
	}
	var out [][]any
	for _, row := range rows {
		keep := true
		for i, f := range fs {
			if !matches(f, row[cols[i]]) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, row)
		}
	}
	return out, nil
}

// matches reports whether cell passes f; f is valid.
func matches(f workspace.Filter, cell any) bool {
	switch f.Op {
	case workspace.OpEq:
		c, ok := compare(cell, f.Value)
		return ok && c == 0
	case workspace.OpNe:
		c, ok := compare(cell, f.Value)
		return !ok || c != 0
	case workspace.OpGt, workspace.OpGte, workspace.OpLt, workspace.OpLte:
		if cell == nil {
			return false
		}
		c, ok := compare(cell, f.Value)
		return ok && (f.Op == workspace.OpGt && c > 0 || f.Op == workspace.OpGte && c >= 0 || f.Op == workspace.OpLt && c < 0 || f.Op == workspace.OpLte && c <= 0)
	case workspace.OpContains:
		text, ok := cellText(cell)
		return ok && strings.Contains(strings.ToLower(text), strings.ToLower(f.Value.(string)))
	case workspace.OpIn:
		list, _ := inValues(f.Value)
		return slices.ContainsFunc(list, func(v any) bool {
			c, ok := compare(cell, v)
			return ok && c == 0
		})
	}
	return false
}

// compare orders a cell and a filter value: strings as strings, numbers
// (and a numeric string against a number) as numbers, booleans false <
// true, null equal to null. ok is false when they do not compare.
func compare(cell, val any) (int, bool) {
	if cell == nil || val == nil {
		return 0, cell == nil && val == nil
	}
	if a, ok := cell.(bool); ok {
		b, ok := val.(bool)
		return boolCompare(a, b), ok
	}
	if _, ok := val.(bool); ok {
		return 0, false
	}
	cs, cellStr := cell.(string)
	vs, valStr := val.(string)
	if cellStr && valStr {
		return strings.Compare(cs, vs), true
	}
	a, okA := number(cell, true)
	b, okB := number(val, true)
	if !okA || !okB {
		return 0, false
	}
	switch {
	case a < b:
		return -1, true
	case a > b:
		return 1, true
	}
	return 0, true
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// number returns v as a finite float64. Numeric strings count when
// allowStrings is set.
func number(v any, allowStrings bool) (float64, bool) {
	var text string
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		text = string(x)
	case string:
		if !allowStrings || !numericRe.MatchString(x) {
			return 0, false
		}
		text = strings.TrimSpace(x)
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// cellText is the text of a scalar cell, for contains and labels.
func cellText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
