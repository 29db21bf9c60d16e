// Package httpjson is the JSON-over-HTTP plumbing the SDK's HTTP adapters
// share: the one table from askbi error codes to HTTP statuses, the error
// body, body decoding with validation, and JSON 404 and 405 answers.
package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/askbi/askbi"
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
// WriteError.
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

// Decode reads r's JSON body into v, rejecting unknown fields and trailing
// data, and validates v's struct tags (github.com/go-playground/validator:
// a failure is InvalidArgument naming the field as clients spell it). An
// empty body is allowed only when emptyOK (then v keeps its zero value and
// is still validated). A body over MaxBodyBytes is TooLarge.
func Decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) error {
	return DecodeMax(w, r, v, emptyOK, MaxBodyBytes)
}

// DecodeMax is Decode for a route whose bodies may be up to max bytes
// (a message with attachments); a larger one is TooLarge naming max.
func DecodeMax(w http.ResponseWriter, r *http.Request, v any, emptyOK bool, max int64) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
		if max >= 1<<20 {
			return askbi.Errorf(askbi.TooLarge, "body: at most %d MiB", max>>20)
		}
		return askbi.Errorf(askbi.TooLarge, "body: at most %d KiB", max>>10)
	}
	if err != nil {
		return askbi.Errorf(askbi.InvalidArgument, "body: could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if !emptyOK {
			return askbi.Errorf(askbi.InvalidArgument, "body: a JSON object is required")
		}
		return Check(v)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		return askbi.Errorf(askbi.InvalidArgument, "body: must hold exactly one JSON object")
	}
	return Check(v)
}

// jsonError turns a decoding error into InvalidArgument naming the field.
func jsonError(err error) error {
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
