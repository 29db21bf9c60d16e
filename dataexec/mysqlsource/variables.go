package mysqlsource

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
	leadRefRe = regexp.MustCompile(`^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	varRefRe  = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}`)
	// decimalRe is the only number text a number variable may hold.
	decimalRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// References implements [dataexec.VariableBinder]: it returns the {{name}}
// references of sql, or InvalidArgument for one inside quotes or a
// comment and for a ? placeholder written by hand. It runs nothing; it
// reads quotes under the sql_mode the Source has learned, the server's
// default before its first query.
func (s *Source) References(sql string) (_ []string, err error) {
	defer askbi.Wrap(&err, "mysqlsource.Source.References")
	mode := defaultMode
	if m := s.mode.Load(); m != nil {
		mode = *m
	}
	refs, _, err := lex(sql, mode)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.name
	}
	return names, nil
}

// bound is a statement whose {{name}} references are ? placeholders.
type bound struct {
	sql     string
	offsets []int // of each placeholder in sql, in order
	args    []any // the value of each placeholder
}

// bind replaces each {{name}} reference of sql by a ? placeholder, and
// returns the text with the values to send apart from it: the Source
// prepares every statement on the server, whose binary protocol sends
// them as values, never as SQL text.
//
// So no value, whatever its quotes, backslashes or comments, can change
// the statement. That leaves lex one job, finding the references; where
// it disagrees with the parser, check sees the placeholders elsewhere
// than at offsets and refuses the statement, so a disagreement fails
// closed instead of binding a value where it does not stand.
//
// Values are typed as the literal they stand for would be: an integer
// that fits 64 bits is a BIGINT, another decimal without exponent a
// DECIMAL of its precision and scale (CAST(? AS DECIMAL(p, s))), a number
// with an exponent a DOUBLE; a string is text in the connection's
// character set (utf8mb4), a date CAST(? AS DATE), a boolean TRUE or
// FALSE (MySQL's 1 and 0). A placeholder is padded with spaces so that it
// never fuses with the text around it.
func bind(sql string, vars map[string]dataexec.VariableValue, mode sqlMode) (bound, error) {
	refs, _, err := lex(sql, mode)
	if err != nil || len(refs) == 0 {
		return bound{sql: sql}, err
	}
	var b strings.Builder
	var out bound
	last := 0
	for _, r := range refs {
		v, ok := vars[r.name]
		if !ok {
			return bound{}, askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} is not declared", r.name)
		}
		before, after, arg, err := param(r.name, v)
		if err != nil {
			return bound{}, err
		}
		b.WriteString(sql[last:r.start])
		b.WriteString(" " + before)
		out.offsets = append(out.offsets, b.Len())
		b.WriteString("?" + after + " ")
		out.args = append(out.args, arg)
		last = r.end
	}
	b.WriteString(sql[last:])
	out.sql = b.String()
	return out, nil
}

// param checks a variable's value against its type, and returns the text
// around its placeholder and the value to send. The Executor sends only
// values of the right shape; this guards direct callers.
func param(name string, v dataexec.VariableValue) (before, after string, arg any, err error) {
	bad := func(what string) error {
		return askbi.Errorf(askbi.InvalidArgument, "variables: %s must be %s", name, what)
	}
	switch v.Type {
	case workspace.VarNumber:
		n, ok := v.Value.(json.Number)
		if !ok || !decimalRe.MatchString(string(n)) {
			return "", "", nil, bad("a number")
		}
		return number(name, string(n))
	case workspace.VarString:
		s, ok := v.Value.(string)
		if !ok || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return "", "", nil, bad("valid text without NUL")
		}
		return "", "", s, nil
	case workspace.VarDate:
		s, ok := v.Value.(string)
		if d, err := time.Parse(time.DateOnly, s); !ok || err != nil || d.Format(time.DateOnly) != s {
			return "", "", nil, bad("a date (YYYY-MM-DD)")
		}
		return "CAST(", " AS DATE)", s, nil
	case workspace.VarBoolean:
		b, ok := v.Value.(bool)
		if !ok {
			return "", "", nil, bad("true or false")
		}
		return "", "", b, nil
	}
	return "", "", nil, askbi.Errorf(askbi.InvalidArgument, "variables: %s has an unknown type", name)
}

// MySQL's DECIMAL holds at most 65 digits, 30 of them after the point.
const (
	maxDecimalDigits = 65
	maxDecimalScale  = 30
)

// number is param for a number n, as decimalRe accepts it.
func number(name, n string) (before, after string, arg any, err error) {
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		return "", "", i, nil
	}
	if !strings.ContainsAny(n, "eE") {
		whole, frac, _ := strings.Cut(strings.TrimPrefix(n, "-"), ".")
		digits := len(strings.TrimLeft(whole, "0")) + len(frac)
		if digits <= maxDecimalDigits && len(frac) <= maxDecimalScale {
			return "CAST(", " AS DECIMAL(" + strconv.Itoa(max(digits, 1)) + ", " + strconv.Itoa(len(frac)) + "))", n, nil
		}
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return "", "", nil, askbi.Errorf(askbi.InvalidArgument, "variables: %s is out of range for a number", name)
	}
	return "", "", f, nil
}

// sqlRef is a {{name}} reference in SQL text.
type sqlRef struct {
	name       string
	start, end int
}

// region is a quoted string or name, or a comment: its span and the
// character that opened it (', ", `, #, - or /).
type region struct {
	start, end int
	open       byte
}

// lex reads a MySQL statement as the server's lexer does under mode, and
// returns its {{name}} references and its quoted strings, quoted names
// and comments. A reference inside quotes or a comment is
// InvalidArgument (it would be text, not a value), and so is a ?
// placeholder written by hand, which would take a variable's place. The
// regions are returned with the first such error too.
func lex(sql string, mode sqlMode) (refs []sqlRef, regions []region, err error) {
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		end := -1 // the end of a quoted region or comment starting at i
		switch {
		case c == '{':
			if m := leadRefRe.FindStringSubmatchIndex(sql[i:]); m != nil {
				refs = append(refs, sqlRef{name: sql[i+m[2] : i+m[3]], start: i, end: i + m[1]})
				i += m[1]
				continue
			}
		case c == '?':
			fail(askbi.Errorf(askbi.InvalidArgument, "query parameters such as ? are not supported; write the values into the query"))
		case c == '\'':
			end = sqlcell.QuotedEnd(sql, i, !mode.noBackslashEscapes())
		case c == '"':
			// Under ANSI_QUOTES a name, where a backslash is a character.
			end = sqlcell.QuotedEnd(sql, i, !mode.ansiQuotes() && !mode.noBackslashEscapes())
		case c == '`':
			end = sqlcell.QuotedEnd(sql, i, false)
		case c == '#':
			end = sqlcell.LineEnd(sql, i)
		case c == '-' && strings.HasPrefix(sql[i:], "--") && (i+2 == len(sql) || sql[i+2] <= ' '):
			end = sqlcell.LineEnd(sql, i)
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end = len(sql)
			if n := strings.Index(sql[i+2:], "*/"); n >= 0 {
				end = i + 2 + n + 2
			}
		}
		if end < 0 {
			i++
			continue
		}
		if m := varRefRe.FindStringSubmatch(sql[i:end]); m != nil {
			fail(askbi.Errorf(askbi.InvalidArgument, "sql: variable {{%s}} must not be inside quotes or a comment; write it bare, its value is passed as a parameter", m[1]))
		}
		regions = append(regions, region{start: i, end: end, open: c})
		i = end
	}
	return refs, regions, err
}
