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
)

// Limits on variables.
const (
	maxVariables   = 20
	maxStringValue = 1000 // characters of a string variable's value
)

var (
	varNameRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	varTokenRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	leadRefRe  = regexp.MustCompile(`^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	wholeRefRe = regexp.MustCompile(`^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}$`)
	// decimalRe is the only number text a variable may render.
	decimalRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// validateDeclarations checks a request's declared variables.
func validateDeclarations(vars []Variable) error {
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
		case VarNumber, VarString, VarDate, VarBoolean:
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
func resolveVariables(decl []Variable, given map[string]any) (map[string]any, error) {
	if len(given) > maxVariables {
		return nil, askbi.Errorf(askbi.InvalidArgument, "variables: at most %d values", maxVariables)
	}
	for name := range given {
		if !slices.ContainsFunc(decl, func(v Variable) bool { return v.Name == name }) {
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
func coerceVariable(t VariableType, v any) (any, string) {
	switch t {
	case VarNumber:
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
	case VarString:
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
	case VarDate:
		s, ok := v.(string)
		if !ok {
			return nil, "must be a date (YYYY-MM-DD)"
		}
		if d, err := time.Parse(time.DateOnly, s); err != nil || d.Format(time.DateOnly) != s {
			return nil, "must be a date (YYYY-MM-DD)"
		}
		return s, ""
	case VarBoolean:
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

// sqlLiteral renders a normalized variable value as a PostgreSQL literal,
// padded with spaces so it can never fuse with the text around it (an E, U&
// or B prefix, a minus sign before a negative number).
//
// Numbers are validated decimals in parentheses; strings and dates are
// single-quoted with ' doubled, and strings never hold a backslash, so they
// read the same whatever standard_conforming_strings says; booleans are TRUE
// or FALSE.
func sqlLiteral(v any) string {
	switch x := v.(type) {
	case json.Number:
		return " (" + string(x) + ") "
	case bool:
		if x {
			return " TRUE "
		}
		return " FALSE "
	case string:
		return " '" + strings.ReplaceAll(x, "'", "''") + "' "
	}
	panic("dataexec: sqlLiteral of an unnormalized value") // resolveVariables normalizes every value
}

// sqlRef is a {{name}} reference in SQL text.
type sqlRef struct {
	name       string
	start, end int
}

// scanSQL finds the {{name}} references of a PostgreSQL statement. A
// reference inside a quoted string, a quoted identifier, a dollar-quoted
// string or a comment is InvalidArgument: the executor adds the quotes
// itself. When there are references, a backslash inside a plain '...'
// string is InvalidArgument too, because such a string ends at a different
// place when standard_conforming_strings is off.
func scanSQL(sql string) ([]sqlRef, error) {
	var (
		refs      []sqlRef
		backslash bool
	)
	quoted := func(region string) error {
		if m := varTokenRe.FindStringSubmatch(region); m != nil {
			return askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} must not be inside quotes or a comment; write it bare, the value is quoted for you", m[1])
		}
		return nil
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		var end int // end of a quoted region or comment starting at i
		switch {
		case c == '{':
			if m := leadRefRe.FindStringSubmatchIndex(sql[i:]); m != nil {
				refs = append(refs, sqlRef{name: sql[i+m[2] : i+m[3]], start: i, end: i + m[1]})
				i += m[1]
			} else {
				i++
			}
			continue
		case c == '\'':
			escape := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !identByte(sql[i-2]))
			end = quotedEnd(sql, i, '\'', escape)
			if !escape && strings.IndexByte(sql[i:end], '\\') >= 0 {
				backslash = true
			}
		case c == '"':
			end = quotedEnd(sql, i, '"', false)
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end = len(sql)
			if n := strings.IndexByte(sql[i:], '\n'); n >= 0 {
				end = i + n + 1
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end = blockCommentEnd(sql, i)
		case c == '$' && (i == 0 || !identByte(sql[i-1])):
			tag, ok := dollarTag(sql[i:])
			if !ok {
				i++
				continue
			}
			end = len(sql)
			if n := strings.Index(sql[i+len(tag):], tag); n >= 0 {
				end = i + len(tag) + n + len(tag)
			}
		default:
			i++
			continue
		}
		if err := quoted(sql[i:end]); err != nil {
			return nil, err
		}
		i = end
	}
	if backslash && len(refs) > 0 {
		return nil, askbi.Errorf(askbi.InvalidArgument, "sql: a query with variables must not have backslashes in its string literals")
	}
	return refs, nil
}

// identByte reports whether c can continue an SQL identifier.
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// quotedEnd returns the index after the quote closing the region opened by
// q at i (a doubled quote is part of the region; with escape, a backslash
// escapes the next byte), or len(s) when it never closes.
func quotedEnd(s string, i int, q byte, escape bool) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if escape {
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

// blockCommentEnd returns the index after the (nested) comment opened at i.
func blockCommentEnd(s string, i int) int {
	depth := 0
	for j := i; j+1 < len(s); {
		switch s[j : j+2] {
		case "/*":
			depth++
			j += 2
		case "*/":
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		default:
			j++
		}
	}
	return len(s)
}

// dollarTag returns the $tag$ or $$ that s starts with.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
		case '0' <= c && c <= '9' && j > 1:
		default:
			return "", false
		}
	}
	return "", false
}

// renderSQL substitutes resolved variable values into sql. A reference to
// an undeclared variable is InvalidArgument.
func renderSQL(sql string, vals map[string]any) (string, error) {
	refs, err := scanSQL(sql)
	if err != nil || len(refs) == 0 {
		return sql, err
	}
	var b strings.Builder
	last := 0
	for _, r := range refs {
		v, ok := vals[r.name]
		if !ok {
			return "", askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} is not declared", r.name)
		}
		b.WriteString(sql[last:r.start])
		b.WriteString(sqlLiteral(v))
		last = r.end
	}
	b.WriteString(sql[last:])
	return b.String(), nil
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
