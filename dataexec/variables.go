package dataexec

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

// Limits on variables.
const (
	maxVariables   = 20
	maxStringValue = 1000 // characters of a string variable's value
)

var (
	varNameRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	varTokenRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	wholeRefRe = regexp.MustCompile(`^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}$`)
	// decimalRe is the only number text a number variable may hold.
	decimalRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// validateDeclarations checks a request's declared variables.
func validateDeclarations(vars []workspace.Variable) error {
	if len(vars) > maxVariables {
		return askbi.Errorf(askbi.InvalidArgument, "variables: at most %d variables", maxVariables)
	}
	seen := map[string]bool{}
	for _, v := range vars {
		if !varNameRe.MatchString(v.Name) {
			return askbi.Errorf(askbi.InvalidArgument, "variables: a name must be a letter or underscore and up to 63 letters, digits or underscores")
		}
		if seen[v.Name] {
			return askbi.Errorf(askbi.InvalidArgument, "variables: %s appears twice", v.Name)
		}
		seen[v.Name] = true
		switch v.Type {
		case workspace.VarNumber, workspace.VarString, workspace.VarDate, workspace.VarBoolean:
		default:
			return askbi.Errorf(askbi.InvalidArgument, "variables: %s: type must be number, string, date or boolean", v.Name)
		}
		if v.Default != nil {
			if _, msg := coerceVariable(v.Type, v.Default); msg != "" {
				return askbi.Errorf(askbi.InvalidArgument, "variables: %s: default %s", v.Name, msg)
			}
		}
	}
	return nil
}

// resolveVariables validates given against the declarations and fills in
// defaults. Values come back normalized: json.Number for numbers, string
// for strings and dates, bool for booleans.
func resolveVariables(decl []workspace.Variable, given map[string]any) (map[string]any, error) {
	if len(given) > maxVariables {
		return nil, askbi.Errorf(askbi.InvalidArgument, "variables: at most %d values", maxVariables)
	}
	for name := range given {
		if !slices.ContainsFunc(decl, func(v workspace.Variable) bool { return v.Name == name }) {
			return nil, askbi.Errorf(askbi.InvalidArgument, "variables: %s is not declared by this dataset", safeName(name))
		}
	}
	out := make(map[string]any, len(decl))
	for _, v := range decl {
		val := given[v.Name]
		if val == nil { // not given, or JSON null
			val = v.Default
		}
		if val == nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "variables: %s is required; it has no default", v.Name)
		}
		n, msg := coerceVariable(v.Type, val)
		if msg != "" {
			return nil, askbi.Errorf(askbi.InvalidArgument, "variables: %s %s", v.Name, msg)
		}
		out[v.Name] = n
	}
	return out, nil
}

// safeName shortens a caller-supplied name for an error message.
func safeName(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64]) + "…"
	}
	return strconv.Quote(s)
}

// coerceVariable normalizes v to type t, or returns what is wrong with it.
func coerceVariable(t workspace.VariableType, v any) (any, string) {
	switch t {
	case workspace.VarNumber:
		var text string
		switch x := v.(type) {
		case json.Number:
			text = string(x)
		case string:
			text = strings.TrimSpace(x)
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, "must be a finite number"
			}
			text = strconv.FormatFloat(x, 'g', -1, 64)
		case int:
			text = strconv.Itoa(x)
		case int64:
			text = strconv.FormatInt(x, 10)
		default:
			return nil, "must be a number"
		}
		if !decimalRe.MatchString(text) {
			return nil, "must be a number"
		}
		if f, err := strconv.ParseFloat(text, 64); err != nil || math.IsInf(f, 0) {
			return nil, "must be a finite number"
		}
		return json.Number(text), ""
	case workspace.VarString:
		s, ok := v.(string)
		switch {
		case !ok:
			return nil, "must be a string"
		case !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\\"):
			return nil, "must be valid text without backslashes"
		case utf8.RuneCountInString(s) > maxStringValue:
			return nil, "must be at most 1000 characters"
		}
		return s, ""
	case workspace.VarDate:
		s, ok := v.(string)
		if !ok {
			return nil, "must be a date (YYYY-MM-DD)"
		}
		if d, err := time.Parse(time.DateOnly, s); err != nil || d.Format(time.DateOnly) != s {
			return nil, "must be a date (YYYY-MM-DD)"
		}
		return s, ""
	case workspace.VarBoolean:
		switch x := v.(type) {
		case bool:
			return x, ""
		case string:
			if b, err := strconv.ParseBool(x); err == nil && (x == "true" || x == "false") {
				return b, ""
			}
		}
		return nil, "must be true or false"
	}
	return nil, "has an unknown type"
}

// sqlVariables checks the {{name}} references of an SQL request against
// its resolved variables and returns the values the source binds. Only the
// source knows its dialect's quoting, so the references come from its
// VariableBinder; a source without one gets no variables, and a request
// that has some (or looks as if it references one) is Unsupported rather
// than run as written.
func sqlVariables(src Source, sql string, decl []workspace.Variable, vals map[string]any) (map[string]VariableValue, error) {
	b, ok := src.(VariableBinder)
	if !ok {
		if len(decl) > 0 || varTokenRe.MatchString(sql) {
			return nil, askbi.Errorf(askbi.Unsupported, "this connection's source cannot bind {{variables}} in SQL; write the values into the query")
		}
		return nil, nil
	}
	refs, err := b.References(sql)
	if err != nil {
		return nil, err
	}
	for _, name := range refs {
		if _, ok := vals[name]; !ok {
			return nil, askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} is not declared", name)
		}
	}
	if len(decl) == 0 {
		return nil, nil
	}
	out := make(map[string]VariableValue, len(decl))
	for _, v := range decl {
		out[v.Name] = VariableValue{Type: v.Type, Value: vals[v.Name]}
	}
	return out, nil
}

// renderArguments substitutes variables into MCP tool arguments, which
// must be a JSON object (or empty). A string value that is exactly
// "{{name}}" becomes the typed value; a reference inside a longer string
// becomes the value's text. The result is re-encoded JSON, so a value can
// never change the document's structure. An undeclared reference is
// InvalidArgument.
func renderArguments(args json.RawMessage, vals map[string]any) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, askbi.Errorf(askbi.InvalidArgument, "arguments: must be a JSON object")
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, askbi.Errorf(askbi.InvalidArgument, "arguments: must be a JSON object")
	}
	var missing string
	var subst func(v any) any
	subst = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = subst(e)
			}
		case []any:
			for i, e := range x {
				x[i] = subst(e)
			}
		case string:
			if m := wholeRefRe.FindStringSubmatch(x); m != nil {
				if val, ok := vals[m[1]]; ok {
					return val
				}
				missing = m[1]
				return x
			}
			return varTokenRe.ReplaceAllStringFunc(x, func(tok string) string {
				name := varTokenRe.FindStringSubmatch(tok)[1]
				val, ok := vals[name]
				if !ok {
					missing = name
					return tok
				}
				return valueText(val)
			})
		}
		return v
	}
	doc = subst(doc)
	if missing != "" {
		return nil, askbi.Errorf(askbi.InvalidArgument, "arguments: variable {{%s}} is not declared", missing)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, askbi.Errorf(askbi.InvalidArgument, "arguments: must be a JSON object")
	}
	return out, nil
}

// valueText is the plain text of a normalized variable value.
func valueText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return ""
}
