package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver"
)

// TestBatchRefused: a JSON-RPC batch gets 400 with the JSON-RPC error
// Invalid Request whatever it holds, however it is dressed and whatever
// protocol revision the request names, and nothing in it runs: no query,
// no audited tool call. Single messages, also behind whitespace, are
// served as before.
func TestBatchRefused(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)

	msg := func(id int, method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	}
	run := func(id int) string {
		return msg(id, "tools/call", `{"name":"run_dataset","arguments":{"dataset_id":"ds_signups","refresh":true}}`)
	}
	initialize := msg(1, "initialize", `{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	thousands := make([]string, 5000)
	for i := range thousands {
		thousands[i] = run(i + 1)
	}
	for _, tt := range []struct {
		name, body, version string
	}{
		{"mixed methods", "[" + strings.Join([]string{initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			msg(2, "tools/list", `{}`), run(3), msg(4, "ping", `{}`)}, ",") + "]", ""},
		{"one message", "[" + run(1) + "]", ""},
		{"empty", "[]", ""},
		{"behind whitespace", " \r\n\t [" + run(1) + "," + run(2) + "]", ""},
		{"behind a byte order mark", "\ufeff[" + run(1) + "]", ""},
		{"behind a byte order mark and whitespace", "\n\ufeff [" + run(1) + "]", ""},
		{"trailing bytes", "[" + run(1) + "] and more", ""},
		{"naming 2025-03-26", "[" + run(1) + "," + run(2) + "]", "2025-03-26"},
		{"naming 2025-11-25", "[" + run(1) + "]", "2025-11-25"},
		{"5,000 tools/call", "[" + strings.Join(thousands, ",") + "]", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, audited := e.source.calls, toolCalls(e)
			req := mcpRequest(t.Context(), e.url, token, tt.body)
			if tt.version != "" {
				req.Header.Set("MCP-Protocol-Version", tt.version)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var answer struct {
				ID    any `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Code string `json:"code"`
					} `json:"data"`
				} `json:"error"`
			}
			derr := json.NewDecoder(resp.Body).Decode(&answer)
			if resp.StatusCode != http.StatusBadRequest || derr != nil || answer.ID != nil || answer.Error.Code != -32600 ||
				answer.Error.Data.Code != "invalid_argument" || !strings.Contains(answer.Error.Message, "batches are not accepted") {
				t.Errorf("status %d, answer %+v (%v); want 400 with the JSON-RPC error -32600 saying batches are not accepted",
					resp.StatusCode, answer, derr)
			}
			if n := e.source.calls - calls; n != 0 {
				t.Errorf("the refused batch ran %d queries", n)
			}
			if n := toolCalls(e) - audited; n != 0 {
				t.Errorf("the refused batch made %d tool calls", n)
			}
		})
	}

	// One message per POST is served, also behind whitespace.
	for _, body := range []string{run(1), "\n\t " + run(2)} {
		calls := e.source.calls
		status, _, b := postMCP(t, e.url, token, body)
		if status != http.StatusOK || !strings.Contains(string(b), `"structuredContent"`) || e.source.calls != calls+1 {
			t.Errorf("single message %.40q: status %d, %d queries, answer %.200s; want 200 and the call run once", body, status, e.source.calls-calls, b)
		}
	}
	// Without a credential a batch gets the 401 every request does.
	if status, h, _ := postMCP(t, e.url, "", "["+run(1)+"]"); status != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
		t.Errorf("batch without a credential: status %d, want 401 with a challenge", status)
	}
}

// toolCalls counts the audited tool calls.
func toolCalls(e *env) int {
	n := 0
	for _, en := range e.audit.Entries() {
		if en.Action == mcpserver.ActionToolCall {
			n++
		}
	}
	return n
}
