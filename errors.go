package askbi

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Code is a stable, exported error code. Codes cross the wire (chat events,
// MCP tool results, HTTP responses); they are never renamed or removed.
type Code string

// The error vocabulary shared by every askbi package and adapter.
const (
	InvalidArgument  Code = "invalid_argument"
	Unauthenticated  Code = "unauthenticated"
	Forbidden        Code = "forbidden"
	ScopeRequired    Code = "scope_required"
	NotFound         Code = "not_found" // also for entities the caller cannot see
	Conflict         Code = "conflict"
	RateLimited      Code = "rate_limited"
	TooLarge         Code = "too_large"
	Timeout          Code = "timeout"
	Unavailable      Code = "unavailable"
	Unsupported      Code = "unsupported"
	InvalidResult    Code = "invalid_result"
	ApprovalRequired Code = "approval_required"
	ApprovalInvalid  Code = "approval_invalid"
	Internal         Code = "internal"
	// BudgetExceeded refuses a chat turn that would start past a token
	// budget of the user's team or of the user; its message says who set
	// the budget and when it resets.
	BudgetExceeded Code = "budget_exceeded"
)

// Codes lists every code in its documented order. New codes are
// appended; none is ever reordered or removed.
var Codes = []Code{
	InvalidArgument, Unauthenticated, Forbidden, ScopeRequired, NotFound,
	Conflict, RateLimited, TooLarge, Timeout, Unavailable, Unsupported,
	InvalidResult, ApprovalRequired, ApprovalInvalid, Internal,
	BudgetExceeded,
}

// Error is the one error type of askbi.
//
// Message is safe to show to users and models: it never holds SQL, stack
// traces, credentials, provider bodies or internal IDs. Err is the cause, for
// logs only.
type Error struct {
	Code    Code
	Op      string // the operation, e.g. "access.Checker.Read"
	Message string // safe for users
	Err     error  // the underlying cause; never shown to users
}

// Errorf returns an *Error with the code and a formatted safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error implements error. It includes Op and the cause, so it is for logs;
// use [ErrorMessage] for users.
func (e *Error) Error() string {
	var s string
	if e.Op != "" {
		s = e.Op + ": "
	}
	var inner *Error
	if e.Message != "" || !errors.As(e.Err, &inner) {
		s += string(e.Code)
		if e.Message != "" {
			s += ": " + e.Message
		}
		if e.Err != nil {
			s += ": "
		}
	}
	if e.Err != nil {
		s += e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code and no other
// fields set, or a Code sentinel made with E. It lets callers write
// errors.Is(err, askbi.E(askbi.NotFound)).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && t.Op == "" && t.Message == "" && t.Err == nil
}

// E returns a bare *Error carrying only code, for use as an errors.Is target.
func E(code Code) *Error { return &Error{Code: code} }

// ErrorCode returns the code of the first *Error in err's chain, or Internal
// for a foreign error. It returns "" for a nil error.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Code == "" {
			return Internal
		}
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the safe, user-facing message of err: the Message of
// the first *Error in the chain that has one, or a generic text for its
// code. Foreign errors never show their text.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	for chain := err; errors.As(chain, &e); chain = e.Err {
		if e.Message != "" {
			return e.Message
		}
		if e.Err == nil {
			break
		}
	}
	return defaultMessages[ErrorCode(err)]
}

var defaultMessages = map[Code]string{
	InvalidArgument:  "The request is invalid.",
	Unauthenticated:  "Authentication is required.",
	Forbidden:        "You do not have permission to do this.",
	ScopeRequired:    "The credential lacks the required scope.",
	NotFound:         "Not found.",
	Conflict:         "The request conflicts with the current state.",
	RateLimited:      "Too many requests; try again later.",
	TooLarge:         "The request or result is too large.",
	Timeout:          "The operation timed out.",
	Unavailable:      "The service is unavailable.",
	Unsupported:      "This operation is not supported.",
	InvalidResult:    "The result is invalid.",
	ApprovalRequired: "This action needs approval.",
	ApprovalInvalid:  "The approval is invalid or has expired.",
	Internal:         "An internal error occurred.",
	BudgetExceeded:   "The token budget for this period is used up.",
}

// Wrap adds op to *errp when it is non-nil. A foreign error becomes an
// Internal *Error, so its text never reaches users. Use it once per function
// as defer askbi.Wrap(&err, "pkg.Func").
func Wrap(errp *error, op string) {
	if *errp == nil {
		return
	}
	*errp = &Error{Code: ErrorCode(*errp), Op: op, Err: *errp}
}

// retryHint is the cause of a RateLimited or Unavailable error that says
// when trying again may succeed.
type retryHint struct{ after time.Duration }

func (h *retryHint) Error() string { return fmt.Sprintf("retry after %s", h.after) }

// Retry returns an error with code ([RateLimited] or Unavailable, as a
// rule) and a safe message, carrying the hint that the same call may
// succeed after d. Adapters read it with [RetryAfter]: the HTTP adapters
// answer it as a Retry-After header, the MCP server also in the tool
// result.
func Retry(code Code, d time.Duration, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: &retryHint{after: d}}
}

// noRetry is the cause of an error that waiting does not fix.
type noRetry struct{}

func (noRetry) Error() string { return "waiting does not help" }

// NoRetry returns an error with code (Unavailable, as a rule) and a safe
// message, saying that the same call will not succeed by waiting: what is
// missing is a change someone has to make (a model that is not
// configured, an action no longer offered). [RetryAfter] answers false for
// it, so adapters send no Retry-After.
func NoRetry(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: noRetry{}}
}

// RetryAfter returns how long a caller should wait before repeating a
// call that failed with err, in whole seconds (at least 1), and whether
// waiting can help at all: true for [RateLimited] and Unavailable errors,
// with the hint of Retry when the error carries one and 1 s otherwise,
// except for an error made by [NoRetry].
func RetryAfter(err error) (seconds int, ok bool) {
	switch ErrorCode(err) {
	case RateLimited, Unavailable:
	default:
		return 0, false
	}
	if errors.As(err, new(noRetry)) {
		return 0, false
	}
	var h *retryHint
	if errors.As(err, &h) {
		return max(1, int(math.Ceil(h.after.Seconds()))), true
	}
	return 1, true
}
