package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/askbi/askbi"
)

// httpStatus maps each askbi code to the HTTP status of the chat and
// memory API: the one table of the reference server.
var httpStatus = map[askbi.Code]int{
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

// statusOf returns err's HTTP status.
func statusOf(err error) int {
	if s, ok := httpStatus[askbi.ErrorCode(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorDoc is the body of every error answer.
type errorDoc struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    askbi.Code `json:"code"`
	Message string     `json:"message"`
}

// writeError answers err with its status and safe message. Internal
// errors are logged with their detail; users see only the safe message.
func (a *app) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := askbi.ErrorCode(err)
	a.logInternal(r, err)
	if code == askbi.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="askbi"`)
	}
	writeJSON(w, statusOf(err), errorDoc{errorBody{Code: code, Message: askbi.ErrorMessage(err)}})
}

// logInternal logs err with its detail when it is internal.
func (a *app) logInternal(r *http.Request, err error) {
	if askbi.ErrorCode(err) == askbi.Internal {
		a.log.ErrorContext(r.Context(), "refserver: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
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

// maxBodyBytes caps a JSON request body.
const maxBodyBytes = 64 << 10

// decodeBody reads r's JSON body into v, rejecting unknown fields and
// trailing data, and validates it. An empty body is allowed only when
// emptyOK (then v keeps its zero value and is still validated).
func decodeBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
		return askbi.Errorf(askbi.TooLarge, "body: at most %d KiB", maxBodyBytes>>10)
	}
	if err != nil {
		return askbi.Errorf(askbi.InvalidArgument, "body: could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if !emptyOK {
			return askbi.Errorf(askbi.InvalidArgument, "body: a JSON object is required")
		}
		return check(v)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		return askbi.Errorf(askbi.InvalidArgument, "body: must hold exactly one JSON object")
	}
	return check(v)
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

// check validates v's struct tags; the first failure is InvalidArgument
// naming the field.
func check(v any) error {
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

// queryInt parses query parameter name as an integer; absent or empty is
// zero.
func queryInt(r *http.Request, name string) (int, error) {
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
