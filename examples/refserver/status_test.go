package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/askbi/askbi/internal/chattest"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// TestModelNotConfigured: with -provider openai and its key variable unset
// the server still starts; the assistant says it is unavailable and why,
// without naming the variable, and MCP keeps serving.
func TestModelNotConfigured(t *testing.T) {
	ta := MustApp(t, func(c *config) {
		c.provider, c.model, c.providerKeyEnv = "openai", "gpt-4o-mini", "ASKBI_TEST_UNSET_KEY"
	})
	if !strings.HasPrefix(ta.model, "not configured") {
		t.Errorf("model description %q", ta.model)
	}
	alice := ta.session(t, "alice")
	var st ask.Status
	ta.MustDo(t, http.StatusOK, "GET", "/ai/status", alice, nil, &st)
	if st.Available || st.Reason != "The assistant's model is not configured." {
		t.Errorf("status = %+v", st)
	}
	status, _, b := ta.Do(t, "POST", "/ai/conversations", alice, "{}")
	if status != http.StatusServiceUnavailable || chattest.MustError(t, b).Code != askbi.Unavailable ||
		chattest.MustError(t, b).Message != st.Reason || strings.Contains(string(b), "ASKBI_TEST_UNSET_KEY") {
		t.Errorf("POST /ai/conversations: %d %s", status, b)
	}
	// MCP serves.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	status, _, b = ta.Do(t, "POST", "/mcp", ta.apiKey(t, "alice"), body, "Accept", "application/json, text/event-stream",
		"MCP-Protocol-Version", "2025-11-25")
	if status != http.StatusOK || !strings.Contains(string(b), "run_dataset") {
		t.Errorf("MCP tools/list: %d %s", status, b)
	}
}

// TestSessionTokenRedacted: a session token pasted into the chat is
// redacted in history, events and what the model sees.
func TestSessionTokenRedacted(t *testing.T) {
	model := mock.New()
	ta := MustApp(t, func(c *config) { c.modelOverride = model })
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "my token is " + alice + ", show signups by week"})
	secret := strings.TrimPrefix(alice, sessionPrefix)
	b, _ := json.Marshal(events)
	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	v, _ := json.Marshal(view)
	m, _ := json.Marshal(model.Requests())
	for where, s := range map[string]string{"events": string(b), "history": string(v), "model context": string(m)} {
		if strings.Contains(s, secret) {
			t.Errorf("%s hold the session token", where)
		}
	}
	if !strings.Contains(string(v), "my token is [redacted]") {
		t.Errorf("history: %s", v)
	}
}

// TestAssistantRoles: -assistant-roles reaches the assistant: the roles it
// leaves out are refused the chat, and their status says why.
func TestAssistantRoles(t *testing.T) {
	ta := MustApp(t, func(c *config) { c.assistantRoles = "owner,admin,editor" })
	vic, alice := ta.session(t, "vic"), ta.session(t, "alice")
	var st ask.Status
	ta.MustDo(t, http.StatusOK, "GET", "/ai/status", vic, nil, &st)
	if st.Available || !strings.Contains(st.Reason, "role") {
		t.Errorf("vic's status = %+v", st)
	}
	if status, _, b := ta.Do(t, "POST", "/ai/conversations", vic, "{}"); status != http.StatusForbidden || chattest.MustError(t, b).Code != askbi.Forbidden {
		t.Errorf("vic creates a conversation: %d %s", status, b)
	}
	ta.MustConversation(t, alice)
}
