package httpjson_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/httpjson"
)

func TestErrorStatuses(t *testing.T) {
	want := map[askbi.Code]int{
		askbi.InvalidArgument: 400, askbi.Unauthenticated: 401, askbi.Forbidden: 403, askbi.ScopeRequired: 403,
		askbi.NotFound: 404, askbi.Conflict: 409, askbi.RateLimited: 429, askbi.TooLarge: 413, askbi.Timeout: 504,
		askbi.Unavailable: 503, askbi.Unsupported: 501, askbi.InvalidResult: 422, askbi.ApprovalRequired: 409,
		askbi.ApprovalInvalid: 409, askbi.Internal: 500, askbi.BudgetExceeded: 429,
	}
	// Every code, so a code added without a thought for its status shows
	// up here instead of answering 500 unnoticed.
	got := map[askbi.Code]int{}
	for _, c := range askbi.Codes {
		got[c] = httpjson.Status(c)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status table mismatch (-want +got):\n%s", diff)
	}
	if s := httpjson.Status("no_such_code"); s != 500 {
		t.Errorf("Status of an unknown code = %d, want 500", s)
	}
}

// TestWriteError: each error answers its code's status and safe message;
// an internal one is logged with its detail and shown without it.
func TestWriteError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		want    httpjson.ErrorBody
		logged  bool
		realm   bool
		private string // must not reach the answer
	}{
		{"foreign error", fmt.Errorf("pq: password authentication failed for user secret_user"), 500,
			httpjson.ErrorBody{Code: askbi.Internal, Message: "An internal error occurred."}, true, false, "secret_user"},
		{"wrapped internal", &askbi.Error{Code: askbi.Internal, Message: "the memory could not be saved", Err: fmt.Errorf("seal: secret_key_id")}, 500,
			httpjson.ErrorBody{Code: askbi.Internal, Message: "the memory could not be saved"}, true, false, "secret_key_id"},
		{"not found", askbi.Errorf(askbi.NotFound, "Conversation not found."), 404,
			httpjson.ErrorBody{Code: askbi.NotFound, Message: "Conversation not found."}, false, false, ""},
		{"unauthenticated", askbi.Errorf(askbi.Unauthenticated, "sign in"), 401,
			httpjson.ErrorBody{Code: askbi.Unauthenticated, Message: "sign in"}, false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := httptest.NewRecorder()
			httpjson.WriteError(rec, httptest.NewRequest("GET", "/ai/memory", nil), slog.New(slog.NewTextHandler(&logs, nil)), tc.err)
			if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("status %d, Content-Type %q, want %d JSON", rec.Code, rec.Header().Get("Content-Type"), tc.status)
			}
			var doc httpjson.ErrorDoc
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if diff := cmp.Diff(tc.want, doc.Error); diff != "" {
				t.Errorf("error body mismatch (-want +got):\n%s", diff)
			}
			if tc.private != "" && strings.Contains(rec.Body.String(), tc.private) {
				t.Errorf("the answer shows the detail: %s", rec.Body)
			}
			if logged := strings.Contains(logs.String(), tc.err.Error()); logged != tc.logged {
				t.Errorf("logged the detail = %v, want %v; logs: %s", logged, tc.logged, logs.String())
			}
			if realm := strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer"); realm != tc.realm {
				t.Errorf("WWW-Authenticate %q", rec.Header().Get("WWW-Authenticate"))
			}
		})
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "/ai"}, {"/", "/ai"}, {"ai", "/ai"}, {"/x/", "/x"}, {"x/y", "/x/y"}, {"//x//", "/x"},
	} {
		if got := httpjson.Prefix(tc.in, "/ai"); got != tc.want {
			t.Errorf("Prefix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
