// Package httpjson is the JSON-over-HTTP plumbing the SDK's HTTP adapters
// share: the one table from askbi error codes to HTTP statuses, the error
// body, body decoding with validation, and JSON 404 and 405 answers.
package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-playground/validator/v10"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// statuses maps each askbi code to its HTTP status: the one table of the
// SDK's HTTP adapters.
var statuses = map[askbi.Code]int{
	askbi.InvalidArgument: http.StatusBadRequest,
	askbi.Unauthenticated: http.StatusUnauthorized,
	askbi.Forbidden:       http.StatusForbidden,
	askbi.ScopeRequired:   http.StatusForbidden,
	askbi.NotFound:        http.StatusNotFound,
	askbi.Conflict:        http.StatusConflict,
	askbi.RateLimited:     http.StatusTooManyRequests,
	askbi.TooLarge:        http.StatusRequestEntityTooLarge,
	askbi.Timeout:         http.StatusGatewayTimeout,
	askbi.Unavailable:     http.StatusServiceUnavailable,
	askbi.Unsupported:     http.StatusNotImplemented,
	askbi.InvalidResult:   http.StatusUnprocessableEntity,
	// Never an HTTP answer in practice (a gated call is an event), but
	// mapped so the table is total.
	askbi.ApprovalRequired: http.StatusConflict,
	// The approval exists in another state than the request claims
	// (consumed, rejected, expired, or bound to other arguments): the
	// request conflicts with server state, and repeating it cannot help.
	askbi.ApprovalInvalid: http.StatusConflict,
	askbi.Internal:        http.StatusInternalServerError,
	// A token budget used up for its period: too many requests over a
	// long window. No Retry-After: the message says when it resets,
	// which may be days away.
	askbi.BudgetExceeded: http.StatusTooManyRequests,
}

// Status returns the HTTP status of code; an unknown code is 500.
func Status(code askbi.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorDoc is the body of every error answer:
// {"error": {"code": "...", "message": "..."}}.
type ErrorDoc struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is a stable code and a message safe for users, and for
// rate_limited and unavailable the seconds to wait before trying again.
type ErrorBody struct {
	Code       askbi.Code `json:"code"`
	Message    string     `json:"message"`
	RetryAfter int        `json:"retry_after,omitempty"`
}

// WriteError answers err with its status and safe message. Internal
// errors are logged with their detail; users see only the safe message.
// A rate_limited or unavailable answer carries Retry-After.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	body := Body(r, log, err)
	if body.Code == askbi.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="askbi"`)
	}
	if body.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(body.RetryAfter))
	}
	WriteJSON(w, Status(body.Code), ErrorDoc{body})
}

// Body is err's code and safe message, for an answer that carries an
// error beside other fields; an internal error is logged as in
// [WriteError].
func Body(r *http.Request, log *slog.Logger, err error) ErrorBody {
	LogInternal(r, log, err)
	b := ErrorBody{Code: askbi.ErrorCode(err), Message: askbi.ErrorMessage(err)}
	b.RetryAfter, _ = askbi.RetryAfter(err)
	return b
}

// LogInternal logs err with its detail when it is internal.
func LogInternal(r *http.Request, log *slog.Logger, err error) {
	if askbi.ErrorCode(err) == askbi.Internal {
		log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}

// Reply answers v as JSON with status, or err when it is not nil
// ([WriteError]). v is built before err is known: it must not read a
// result that is only valid without an error.
func Reply(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, v any, err error) {
	if err != nil {
		WriteError(w, r, log, err)
		return
	}
	WriteJSON(w, status, v)
}

// Route is the one way the SDK's HTTP adapters begin a request: authn
// reads the request's principal, begin (nil: none) passes it through the
// adapter's gate once, and fn runs with the live principal; an error of
// either is answered as JSON ([WriteError], which logs an internal one on
// log).
func Route(log *slog.Logger, authn access.Authenticate, begin func(context.Context, access.Principal) (access.Principal, error),
	fn func(http.ResponseWriter, *http.Request, access.Principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := authn(r)
		if err == nil && begin != nil {
			p, err = begin(r.Context(), p)
		}
		if err != nil {
			WriteError(w, r, log, err)
			return
		}
		fn(w, r, p)
	}
}

// WriteJSON answers v as JSON with status, never cached.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"An internal error occurred."}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// MaxBodyBytes caps a JSON request body.
const MaxBodyBytes = 64 << 10

// Limits every JSON body meets, checked as its bytes arrive, so that a
// body that breaks one is refused before the rest of it is read.
const (
	// MaxDepth is how deeply a body's objects and lists may nest.
	MaxDepth = 64
	// MaxItems caps a body's object members and list elements together:
	// a small body must not decode into a large structure (a list of
	// eight million empty objects is 24 MB of JSON and 512 MB of Go
	// structs).
	MaxItems = 10000
	// MaxKeyBytes caps an object key, as sent.
	MaxKeyBytes = 1 << 10
)

// Decode reads r's JSON body into v, rejecting unknown fields and trailing
// data, and validates v's struct tags (github.com/go-playground/validator:
// a failure is InvalidArgument naming the field as clients spell it). An
// empty body is allowed only when emptyOK (then v keeps its zero value and
// is still validated). A body over [MaxBodyBytes] is TooLarge. The body is
// read through [NewReader], with its checks.
func Decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) error {
	return DecodeMax(w, r, v, emptyOK, MaxBodyBytes, nil)
}

// DecodeMax is Decode for a route whose bodies may be up to max bytes
// (a message with attachments); a larger one is TooLarge naming max.
// charge, when not nil, is called with the size of each piece of the
// body as it is read (within max): an error it returns ends the reading
// and is the answer (RateLimited for a byte budget, say).
func DecodeMax(w http.ResponseWriter, r *http.Request, v any, emptyOK bool, max int64, charge func(n int) error) error {
	body, err := NewReader(w, r, max, charge)
	if err != nil {
		return err
	}
	d := json.NewDecoder(body)
	d.DisallowUnknownFields()
	switch err := d.Decode(v); {
	case err == io.EOF: // no body, or only white space
		if !emptyOK {
			return askbi.Errorf(askbi.InvalidArgument, "body: a JSON object is required")
		}
		return Check(v)
	case err != nil:
		return jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		if err != nil && askbi.ErrorCode(err) != askbi.Internal {
			return err // too large, say
		}
		return askbi.Errorf(askbi.InvalidArgument, "body: must hold exactly one JSON object")
	}
	return Check(v)
}

// NewReader returns r's body as the SDK reads every JSON body, for a
// decoder of the caller's: refused at once when its Content-Type is not
// application/json (parameters such as charset=utf-8 allowed; a body
// without one is refused too) or its Content-Length is over max, and as
// it is read, an error ends it at the first byte past max (TooLarge),
// the first duplicate key in an object (InvalidArgument naming it; keys
// that differ only in case count as one, as encoding/json matches them
// to one field), nesting past [MaxDepth], more than [MaxItems] members and
// elements, or a key over [MaxKeyBytes]. A duplicate key is refused
// because decoders disagree on which one wins: a body must mean one
// thing to every reader. The Content-Type rule keeps a cross-site HTML
// form (which can send text/plain, never application/json) from posting
// JSON. charge is as for [DecodeMax]. Every error is an *[askbi.Error].
func NewReader(w http.ResponseWriter, r *http.Request, max int64, charge func(n int) error) (io.Reader, error) {
	if r.ContentLength > max {
		return nil, tooLarge(max)
	}
	if r.ContentLength != 0 {
		ct := r.Header.Values("Content-Type")
		if len(ct) != 1 {
			return nil, askbi.Errorf(askbi.InvalidArgument, "Content-Type: must be application/json")
		}
		if mt, _, err := mime.ParseMediaType(ct[0]); err != nil || mt != "application/json" {
			return nil, askbi.Errorf(askbi.InvalidArgument, "Content-Type: must be application/json")
		}
	}
	return &scanner{r: http.MaxBytesReader(w, r.Body, max), max: max, charge: charge, seed: maphash.MakeSeed()}, nil
}

// NewStrictReader passes the JSON read from r through NewReader's checks
// of its structure (each key once, nesting, members, key length), for a
// JSON document that does not come as a request body, such as one the
// server fetched. It caps nothing: r is capped already, at max bytes,
// which its errors name.
func NewStrictReader(r io.Reader, max int64) io.Reader {
	return &scanner{r: r, max: max, seed: maphash.MakeSeed(), keep: true}
}

func tooLarge(max int64) error {
	return askbi.Errorf(askbi.TooLarge, "body: at most %s", Size(max))
}

// Size writes n bytes for people: "24 MiB", "64 KiB", "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// scanner passes a JSON body through to a decoder, following its
// structure byte by byte to enforce NewReader's limits as the bytes
// arrive. It does not check the syntax (the decoder does); it only needs
// to know where keys, values and nesting are, and after a syntax error
// it may report nonsense, which is still a refusal.
type scanner struct {
	r      io.Reader
	max    int64
	charge func(int) error
	seed   maphash.Seed
	err    error
	keep   bool // r's own errors are passed on as they are (NewStrictReader)

	stack []frame
	items int
	str   bool   // inside a string
	esc   bool   // after a backslash inside a string
	isKey bool   // the string is an object's key
	key   []byte // the key being read, as sent
}

// frame is one object or list the scanner is inside.
type frame struct {
	object  bool
	wantKey bool                // object: the next string is a key
	key     string              // object: the key of the member being read
	keys    map[uint64]struct{} // object: its keys so far, folded and hashed
	fresh   bool                // list: no element yet
	index   int                 // list: the element being read
}

func (s *scanner) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		var mb *http.MaxBytesError
		switch {
		case s.keep:
		case errors.As(err, &mb):
			err = tooLarge(s.max)
		case askbi.ErrorCode(err) == askbi.Internal:
			err = askbi.Errorf(askbi.InvalidArgument, "body: could not be read")
		}
		s.err = err
	}
	if n > 0 && s.charge != nil {
		if cerr := s.charge(n); cerr != nil {
			s.err = cerr
			return 0, cerr
		}
	}
	for i := 0; i < n; i++ {
		if s.str && !s.isKey && !s.esc {
			// Inside a value's string only its end matters: skip to it
			// (a body's bulk is strings, such as base64 images).
			j := bytes.IndexAny(p[i:n], `"\`)
			if j < 0 {
				break
			}
			i += j
		}
		if serr := s.step(p[i]); serr != nil {
			s.err = serr
			return 0, serr
		}
	}
	return n, err
}

// step follows one byte of the body.
func (s *scanner) step(c byte) error {
	if s.str {
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.str = false
			if s.isKey {
				return s.endKey()
			}
			return nil
		}
		if s.isKey {
			if len(s.key) == MaxKeyBytes {
				return askbi.Errorf(askbi.InvalidArgument, "%s: a key is at most %s", s.path(false), Size(MaxKeyBytes))
			}
			s.key = append(s.key, c)
		}
		return nil
	}
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return nil
	}
	top := s.top()
	if top != nil && !top.object && top.fresh {
		top.fresh = false
		if c != ']' {
			if err := s.item(); err != nil {
				return err
			}
		}
	}
	switch c {
	case '"':
		s.str, s.isKey = true, top != nil && top.object && top.wantKey
		if s.isKey {
			top.wantKey = false
			s.key = s.key[:0]
			return s.item()
		}
	case '{', '[':
		if len(s.stack) == MaxDepth {
			return askbi.Errorf(askbi.InvalidArgument, "body: nested more than %d deep", MaxDepth)
		}
		s.stack = append(s.stack, frame{object: c == '{', wantKey: c == '{', fresh: c == '['})
	case '}', ']':
		if len(s.stack) > 0 {
			s.stack = s.stack[:len(s.stack)-1]
		}
	case ',':
		switch {
		case top == nil:
		case top.object:
			top.wantKey = true
		default:
			top.index++
			return s.item()
		}
	}
	return nil
}

func (s *scanner) top() *frame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

// item counts an object member or list element.
func (s *scanner) item() error {
	if s.items++; s.items > MaxItems {
		return askbi.Errorf(askbi.TooLarge, "body: at most %d members and list items", MaxItems)
	}
	return nil
}

// endKey records the key just read in its object, refusing one the
// object already has.
func (s *scanner) endKey() error {
	key := string(s.key)
	if bytes.IndexByte(s.key, '\\') >= 0 {
		var k string
		if json.Unmarshal([]byte(`"`+key+`"`), &k) == nil {
			key = k
		}
	}
	top := s.top()
	top.key = key
	if top.keys == nil {
		top.keys = map[uint64]struct{}{}
	}
	h := maphash.String(s.seed, fold(key))
	if _, dup := top.keys[h]; dup {
		return askbi.Errorf(askbi.InvalidArgument, "%s: duplicate key", s.path(true))
	}
	top.keys[h] = struct{}{}
	return nil
}

// path names the member being read as clients spell it,
// "context[0].id", or with member false the object it is in.
func (s *scanner) path(member bool) string {
	var b strings.Builder
	for i, f := range s.stack {
		switch {
		case f.object && !member && i == len(s.stack)-1:
		case !f.object:
			fmt.Fprintf(&b, "[%d]", f.index)
		case b.Len() > 0:
			b.WriteString("." + f.key)
		default:
			b.WriteString(f.key)
		}
	}
	if b.Len() == 0 {
		return "body"
	}
	return shorten(b.String())
}

// shorten keeps a path fit for a message: at most 100 bytes, without
// control characters.
func shorten(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if len(s) > 100 {
		s = strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}

// fold maps each rune of s to the smallest of its case-folding orbit, so
// fold(a) == fold(b) exactly when strings.EqualFold(a, b): the way
// encoding/json matches a key to a field.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}

// jsonError turns a decoding error into InvalidArgument naming the field.
func jsonError(err error) error {
	if err != nil && askbi.ErrorCode(err) != askbi.Internal {
		return err // NewReader's, or a field's own
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return askbi.Errorf(askbi.InvalidArgument, "body: malformed JSON at byte %d", syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return askbi.Errorf(askbi.InvalidArgument, "body: malformed JSON (cut short)")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return askbi.Errorf(askbi.InvalidArgument, "body: must be a JSON object")
		}
		return askbi.Errorf(askbi.InvalidArgument, "%s: must be %s", typ.Field, jsonKind(typ.Type))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return askbi.Errorf(askbi.InvalidArgument, "%s: unknown field", strings.Trim(name, `"`))
	}
	return askbi.Errorf(askbi.InvalidArgument, "body: invalid JSON")
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

var validate = newValidator()

// newValidator names fields as clients spell them: the json tag, or the
// query tag of query-string structs.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		for _, tag := range []string{"json", "query"} {
			if name, _, _ := strings.Cut(f.Tag.Get(tag), ","); name != "" && name != "-" {
				return name
			}
		}
		return f.Name
	})
	return v
}

// Check validates v's struct tags; the first failure is InvalidArgument
// naming the field.
func Check(v any) error {
	err := validate.Struct(v)
	var ve validator.ValidationErrors
	if !errors.As(err, &ve) || len(ve) == 0 {
		if err != nil {
			return fmt.Errorf("validate %T: %w", v, err)
		}
		return nil
	}
	fe := ve[0]
	field := fe.Namespace()
	if _, rest, ok := strings.Cut(field, "."); ok {
		field = rest // drop the struct's own name
	}
	return askbi.Errorf(askbi.InvalidArgument, "%s: %s", field, describe(fe))
}

func describe(fe validator.FieldError) string {
	unit := ""
	switch fe.Kind() {
	case reflect.String:
		unit = " characters"
	case reflect.Slice, reflect.Map, reflect.Array:
		unit = " items"
	}
	switch fe.Tag() {
	case "required":
		return "is required"
	case "max", "lte":
		return "must be at most " + fe.Param() + unit
	case "min", "gte":
		return "must be at least " + fe.Param() + unit
	case "oneof":
		return "must be one of " + strings.Join(strings.Fields(fe.Param()), ", ")
	}
	return "is invalid"
}

// QueryInt parses query parameter name as an integer; absent or empty is
// zero.
func QueryInt(r *http.Request, name string) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, askbi.Errorf(askbi.InvalidArgument, "%s: must be an integer", name)
	}
	return n, nil
}

// Prefix is where a handler is mounted: p with one leading slash and no
// trailing one, or def when p is empty or "/".
func Prefix(p, def string) string {
	if p = "/" + strings.Trim(p, "/"); p == "/" {
		return def
	}
	return p
}

// NoRoute answers what no route of mux matched under prefix (the pattern
// it is mounted at, such as "/ai/", and prefix without its slash): 405
// with Allow when the path exists for other methods, else 404, both as
// JSON errors. The allowed methods are read from mux itself, so there is
// no second list of routes.
func NoRoute(mux *http.ServeMux, prefix string, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != prefix && pattern != strings.TrimSuffix(prefix, "/") && pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			WriteError(w, r, log, askbi.Errorf(askbi.NotFound, "not found"))
			return
		}
		MethodNotAllowed(w, r, allow...)
	}
}

// MethodNotAllowed answers 405 with Allow and the JSON error body.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	WriteJSON(w, http.StatusMethodNotAllowed, ErrorDoc{ErrorBody{Code: askbi.Unsupported,
		Message: r.Method + " is not allowed here; use " + strings.Join(allow, " or ")}})
}
