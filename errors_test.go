package askbi_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
)

func TestErrorCode(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    askbi.Code
		message string
	}{
		{"nil", nil, "", ""},
		{"foreign", io.EOF, askbi.Internal, "An internal error occurred."},
		{"coded", askbi.Errorf(askbi.NotFound, "dashboard not found"), askbi.NotFound, "dashboard not found"},
		{"no message", askbi.E(askbi.RateLimited), askbi.RateLimited, "Too many requests; try again later."},
		{"wrapped with fmt", fmt.Errorf("ctx: %w", askbi.Errorf(askbi.Timeout, "too slow")), askbi.Timeout, "too slow"},
		{"cause hidden", &askbi.Error{Code: askbi.Unavailable, Err: errors.New("dial tcp 10.0.0.1: password=hunter2")}, askbi.Unavailable, "The service is unavailable."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := askbi.ErrorCode(tt.err); got != tt.code {
				t.Errorf("ErrorCode = %q, want %q", got, tt.code)
			}
			if got := askbi.ErrorMessage(tt.err); got != tt.message {
				t.Errorf("ErrorMessage = %q, want %q", got, tt.message)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	f := func(cause error) (err error) {
		defer askbi.Wrap(&err, "pkg.F")
		return cause
	}
	if err := f(nil); err != nil {
		t.Errorf("Wrap(nil) = %v", err)
	}
	err := f(askbi.Errorf(askbi.Forbidden, "no"))
	if askbi.ErrorCode(err) != askbi.Forbidden || askbi.ErrorMessage(err) != "no" || err.Error() != "pkg.F: forbidden: no" {
		t.Errorf("Wrap(coded) = %v", err)
	}
	err = f(errors.New("secret detail"))
	if askbi.ErrorCode(err) != askbi.Internal || askbi.ErrorMessage(err) == "secret detail" || err.Error() != "pkg.F: internal: secret detail" {
		t.Errorf("Wrap(foreign) = %v (%q)", err, askbi.ErrorMessage(err))
	}
}

func TestIs(t *testing.T) {
	err := fmt.Errorf("x: %w", askbi.Errorf(askbi.Conflict, "taken"))
	if !errors.Is(err, askbi.E(askbi.Conflict)) {
		t.Error("errors.Is(conflict) = false")
	}
	if errors.Is(err, askbi.E(askbi.NotFound)) {
		t.Error("errors.Is(not_found) = true")
	}
	var e *askbi.Error
	if !errors.As(err, &e) || e.Message != "taken" {
		t.Errorf("errors.As = %v", e)
	}
}

func TestRetryAfter(t *testing.T) {
	lasting := error(askbi.NoRetry(askbi.Unavailable, "the model is not configured"))
	askbi.Wrap(&lasting, "op") // wrapped as a method's error is
	tests := []struct {
		name    string
		err     error
		seconds int
		ok      bool
	}{
		{"hint", askbi.Retry(askbi.RateLimited, 4*time.Second, "slow down"), 4, true},
		{"hint rounded up", askbi.Retry(askbi.Unavailable, 1200*time.Millisecond, "busy"), 2, true},
		{"hint below a second", askbi.Retry(askbi.RateLimited, time.Millisecond, "slow down"), 1, true},
		{"unavailable without a hint", askbi.Errorf(askbi.Unavailable, "down"), 1, true},
		{"lasting cause", lasting, 0, false},
		{"not a transient code", askbi.Retry(askbi.NotFound, time.Second, "x"), 0, false},
		{"foreign error", io.EOF, 0, false},
		{"nil", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := askbi.RetryAfter(tt.err)
			if diff := cmp.Diff([2]any{tt.seconds, tt.ok}, [2]any{s, ok}); diff != "" {
				t.Errorf("RetryAfter(%v) mismatch (-want +got):\n%s", tt.err, diff)
			}
		})
	}
	if got := askbi.ErrorCode(lasting); got != askbi.Unavailable {
		t.Errorf("NoRetry's code = %q, want unavailable", got)
	}
}

func ExampleErrorMessage() {
	err := &askbi.Error{Code: askbi.NotFound, Op: "dataexec.RunDataset", Message: "dataset not found", Err: errors.New("sql: no rows")}
	fmt.Println(askbi.ErrorCode(err))
	fmt.Println(askbi.ErrorMessage(err))
	fmt.Println(askbi.ErrorMessage(errors.New("pq: password authentication failed")))
	// Output:
	// not_found
	// dataset not found
	// An internal error occurred.
}

// TestCodesStable: codes cross the wire, so the list only grows: the
// codes clients have seen stay, in their order, and each code has a safe
// default message.
func TestCodesStable(t *testing.T) {
	published := []askbi.Code{"invalid_argument", "unauthenticated", "forbidden", "scope_required", "not_found",
		"conflict", "rate_limited", "too_large", "timeout", "unavailable", "unsupported",
		"invalid_result", "approval_required", "approval_invalid", "internal", "budget_exceeded"}
	if len(askbi.Codes) < len(published) {
		t.Fatalf("Codes has %d codes, fewer than the %d published", len(askbi.Codes), len(published))
	}
	if diff := cmp.Diff(published, askbi.Codes[:len(published)]); diff != "" {
		t.Errorf("published codes reordered or removed (-want +got):\n%s", diff)
	}
	for _, c := range askbi.Codes {
		if m := askbi.ErrorMessage(askbi.E(c)); m == "" || m == askbi.ErrorMessage(askbi.E("no_such_code")) {
			t.Errorf("%s has no default message of its own: %q", c, m)
		}
	}
}
