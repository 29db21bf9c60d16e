package access

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/askbi/askbi"
)

// retryHint is the cause of a RateLimited or Unavailable error that says
// when trying again may succeed.
type retryHint struct{ after time.Duration }

func (h *retryHint) Error() string { return fmt.Sprintf("retry after %s", h.after) }

// Retry returns an error with code (RateLimited or Unavailable, as a
// rule) and a safe message, carrying the hint that the same call may
// succeed after d. Adapters read it with RetryAfter: the HTTP adapters
// answer it as a Retry-After header, the MCP server also in the tool
// result.
func Retry(code askbi.Code, d time.Duration, format string, args ...any) *askbi.Error {
	return &askbi.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: &retryHint{after: d}}
}

// noRetry is the cause of an error that waiting does not fix.
type noRetry struct{}

func (noRetry) Error() string { return "waiting does not help" }

// NoRetry returns an error with code (Unavailable, as a rule) and a safe
// message, saying that the same call will not succeed by waiting: what is
// missing is a change someone has to make (a model that is not
// configured, an action no longer offered). RetryAfter answers false for
// it, so adapters send no Retry-After.
func NoRetry(code askbi.Code, format string, args ...any) *askbi.Error {
	return &askbi.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: noRetry{}}
}

// RetryAfter returns how long a caller should wait before repeating a
// call that failed with err, in whole seconds (at least 1), and whether
// waiting can help at all: true for RateLimited and Unavailable errors,
// with the hint of Retry when the error carries one and 1 s otherwise,
// except for an error made by NoRetry.
func RetryAfter(err error) (seconds int, ok bool) {
	switch askbi.ErrorCode(err) {
	case askbi.RateLimited, askbi.Unavailable:
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
