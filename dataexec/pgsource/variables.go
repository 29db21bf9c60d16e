package pgsource

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/sqlcell"
	"github.com/askbi/askbi/workspace"
)

var (
	varTokenRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	leadRefRe  = regexp.MustCompile(`^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	// decimalRe is the only number text a number variable may hold.
	decimalRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
	// placeholderRe finds the placeholders a server message quotes.
	placeholderRe = regexp.MustCompile(`\$[0-9]+\b`)
)

// References implements [dataexec.VariableBinder]: it returns the {{name}}
// references of sql, or InvalidArgument for one inside quotes or a comment
// and for a $n parameter written by hand. It runs nothing.
func (s *Source) References(sql string) (_ []string, err error) {
	defer askbi.Wrap(&err, "pgsource.Source.References")
	refs, err := scanSQL(sql)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.name
	}
	return names, nil
}

// bound is a statement whose {{name}} references are bind parameters.
type bound struct {
	sql   string
	args  []any    // the value of each parameter, $1 first
	names []string // the variable each parameter stands for
}

// bind replaces each {{name}} reference of sql by a bind parameter, and
// returns the text with the values to send apart from it, over the
// extended protocol the Source uses anyway.
//
// A value never becomes SQL text, so no value, whatever its quotes,
// comments or dollar signs, can change the statement. That leaves the
// lexer (scanSQL) one job, finding the references; where it disagrees with
// PostgreSQL's, check sees the parameters out of place and rejects the
// statement, so a disagreement fails closed instead of splicing text.
//
// Each reference gets a parameter of its own, a variable used twice too:
// a shared parameter takes one type, from its first use, where each
// literal it replaces took its own. Parameters are typed as those literals
// were:
//
//   - A string is untyped, unknown until the server resolves it from where
//     it stands, as a quoted literal is; so it compares with text, varchar,
//     citext and enum columns alike, where text would not. Where nothing
//     gives it a type (x IS NULL, the variadic arguments of format) the
//     server says so, and {{x}}::text fixes it.
//   - A number is integer, bigint or numeric by the rules for a numeric
//     constant, so repeat('x', {{n}}) and generate_series still find their
//     integer forms.
//   - A date is a date and a boolean a boolean, as declared.
//
// A placeholder is padded with spaces so that it never fuses with the text
// around it (a$1 would be one identifier). The typed literal syntax DATE
// {{d}} or INTERVAL {{i}}, which needs a quoted string after the type name,
// does not parse with a parameter; {{d}}::date does.
func bind(sql string, vars map[string]dataexec.VariableValue) (bound, error) {
	refs, err := scanSQL(sql)
	if err != nil || len(refs) == 0 {
		return bound{sql: sql}, err
	}
	var b strings.Builder
	out := bound{args: make([]any, 0, len(refs)), names: make([]string, 0, len(refs))}
	last := 0
	for _, r := range refs {
		v, ok := vars[r.name]
		if !ok {
			return bound{}, askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} is not declared", r.name)
		}
		typ, arg, err := param(r.name, v)
		if err != nil {
			return bound{}, err
		}
		out.args, out.names = append(out.args, arg), append(out.names, r.name)
		b.WriteString(sql[last:r.start])
		n := strconv.Itoa(len(out.args))
		if typ == "" {
			b.WriteString(" $" + n + " ")
		} else {
			b.WriteString(" ($" + n + "::" + typ + ") ")
		}
		last = r.end
	}
	b.WriteString(sql[last:])
	out.sql = b.String()
	return out, nil
}

// param checks a variable's value against its type, and returns the type
// of its parameter ("" for untyped) and the value to send. The Executor
// sends only values of the right shape; this guards direct callers.
func param(name string, v dataexec.VariableValue) (typ string, arg any, err error) {
	bad := func(what string) error {
		return askbi.Errorf(askbi.InvalidArgument, "variables: %s must be %s", name, what)
	}
	switch v.Type {
	case workspace.VarNumber:
		n, ok := v.Value.(json.Number)
		if !ok || !decimalRe.MatchString(string(n)) {
			return "", nil, bad("a number")
		}
		return numericType(string(n)), string(n), nil
	case workspace.VarString:
		s, ok := v.Value.(string)
		if !ok || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return "", nil, bad("valid text without NUL")
		}
		return "", s, nil
	case workspace.VarDate:
		s, ok := v.Value.(string)
		if d, err := time.Parse(time.DateOnly, s); !ok || err != nil || d.Format(time.DateOnly) != s {
			return "", nil, bad("a date (YYYY-MM-DD)")
		}
		return "date", s, nil
	case workspace.VarBoolean:
		b, ok := v.Value.(bool)
		if !ok {
			return "", nil, bad("true or false")
		}
		return "boolean", b, nil
	}
	return "", nil, askbi.Errorf(askbi.InvalidArgument, "variables: %s has an unknown type", name)
}

// numericType is the type PostgreSQL gives a numeric constant written as
// n: integer, or bigint, when it has no decimal point or exponent and
// fits; numeric otherwise.
func numericType(n string) string {
	if _, err := strconv.ParseInt(n, 10, 32); err == nil {
		return "integer"
	}
	if _, err := strconv.ParseInt(n, 10, 64); err == nil {
		return "bigint"
	}
	return "numeric"
}

// nameParams rewrites the placeholders that a server message quotes ($1,
// $2 ...) as the {{name}} references they stand for, so that the message
// speaks of the SQL as its author wrote it.
func nameParams(err error, names []string) error {
	e, ok := err.(*askbi.Error)
	if !ok || len(names) == 0 || e.Code != askbi.InvalidArgument {
		return err
	}
	msg := placeholderRe.ReplaceAllStringFunc(e.Message, func(p string) string {
		if n, err := strconv.Atoi(p[1:]); err == nil && n >= 1 && n <= len(names) {
			return "{{" + names[n-1] + "}}"
		}
		return p
	})
	if msg == e.Message {
		return err
	}
	out := *e
	out.Message = msg
	return &out
}

// sqlRef is a {{name}} reference in SQL text.
type sqlRef struct {
	name       string
	start, end int
}

// scanSQL finds the {{name}} references of a PostgreSQL statement. A
// reference inside a quoted string, a quoted identifier, a dollar-quoted
// string or a comment is InvalidArgument: it would be text, not a value.
// So is a $n parameter written by hand, which would collide with the
// parameters bind adds. When there are references, a backslash inside a
// plain '...' string is InvalidArgument too, because such a string ends at
// a different place when standard_conforming_strings is off. (The session
// sets it on, so this no longer guards anything bind does; it is kept so
// the rules did not change when the lexer moved here from dataexec.)
func scanSQL(sql string) ([]sqlRef, error) {
	var (
		refs      []sqlRef
		backslash bool
	)
	quoted := func(region string) error {
		if m := varTokenRe.FindStringSubmatch(region); m != nil {
			return askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} must not be inside quotes or a comment; write it bare, its value is passed as a parameter", m[1])
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
			end = sqlcell.QuotedEnd(sql, i, escape)
			if !escape && strings.IndexByte(sql[i:end], '\\') >= 0 {
				backslash = true
			}
		case c == '"':
			end = sqlcell.QuotedEnd(sql, i, false)
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end = sqlcell.LineEnd(sql, i)
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end = blockCommentEnd(sql, i)
		case c == '$' && (i == 0 || !identByte(sql[i-1])):
			if n := paramDigits(sql[i+1:]); n > 0 {
				return nil, askbi.Errorf(askbi.InvalidArgument, "query parameters such as %s are not supported; write the values into the query", sql[i:i+1+n])
			}
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

// paramDigits returns the number of ASCII digits s starts with.
func paramDigits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

// identByte reports whether c can continue an SQL identifier.
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
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
