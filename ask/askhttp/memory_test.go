package askhttp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/askbi/askbi/internal/chattest"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/memory"
)

func TestMemory(t *testing.T) {
	// Memory routes are rate limited like the rest; this test makes more
	// than a burst of requests.
	ts := MustServer(t, func(c *config) {
		c.limiter = access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1000})
	})
	alice, bob := token("alice"), token("bob")
	var list struct{ Items []memory.Item }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	if list.Items == nil || len(list.Items) != 0 {
		t.Fatalf("initial list: %+v", list.Items)
	}
	var added struct{ Item memory.Item }
	ts.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": "  I report in EUR  "}, &added)
	if added.Item.ID == "" || added.Item.Text != "I report in EUR" {
		t.Fatalf("added: %+v", added.Item)
	}
	var edited struct{ Item memory.Item }
	ts.MustDo(t, http.StatusOK, "PUT", "/ai/memory/"+added.Item.ID, alice, map[string]string{"text": "I report in USD"}, &edited)
	if edited.Item.ID != added.Item.ID || edited.Item.Text != "I report in USD" {
		t.Errorf("edited: %+v", edited.Item)
	}
	// Bob cannot see, edit or delete alice's memory.
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", bob, nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("bob sees %d memories", len(list.Items))
	}
	ts.MustDo(t, http.StatusNotFound, "PUT", "/ai/memory/"+added.Item.ID, bob, map[string]string{"text": "mine"}, nil)
	ts.MustDo(t, http.StatusNotFound, "DELETE", "/ai/memory/"+added.Item.ID, bob, nil, nil)

	// /remember through the chat saves without a model call.
	conv := ts.MustConversation(t, alice)
	events := ts.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "/remember Fiscal year starts in April"})
	if diff := cmp.Diff([]string{"message.completed", "request.completed"}, chattest.Types(events)); diff != "" {
		t.Errorf("/remember events mismatch (-want +got):\n%s", diff)
	}
	if events[0].Text != memory.SavedReply {
		t.Errorf("/remember answered %q", events[0].Text)
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	var texts []string
	for _, it := range list.Items {
		texts = append(texts, it.Text)
	}
	if diff := cmp.Diff([]string{"I report in USD", "Fiscal year starts in April"}, texts); diff != "" {
		t.Errorf("memories mismatch (-want +got):\n%s", diff)
	}

	ts.MustDo(t, http.StatusNoContent, "DELETE", "/ai/memory/"+added.Item.ID, alice, nil, nil)
	ts.MustDo(t, http.StatusNotFound, "DELETE", "/ai/memory/"+added.Item.ID, alice, nil, nil)

	// Fill to the limit of 50; the 51st is too large, by the route and by
	// /remember.
	for i := len(texts) - 1; i < 50; i++ {
		ts.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": fmt.Sprintf("note %d", i)}, nil)
	}
	status, _, b := ts.Do(t, "POST", "/ai/memory", alice, map[string]string{"text": "one too many"})
	if status != http.StatusRequestEntityTooLarge || chattest.MustError(t, b).Code != askbi.TooLarge {
		t.Errorf("51st memory: %d %s", status, b)
	}
	status, _, b = ts.Do(t, "POST", "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "/remember one too many"})
	if status != http.StatusRequestEntityTooLarge || chattest.MustError(t, b).Code != askbi.TooLarge {
		t.Errorf("51st memory by /remember: %d %s", status, b)
	}
	for _, tc := range []struct {
		body  string
		field string
	}{
		{`{}`, "text"},
		{`{"text": ""}`, "text"},
		{`{"text": "   "}`, "text"},
		{`{"text": "` + strings.Repeat("x", 501) + `"}`, "text"},
		{`{"text": 5}`, "text"},
		{`{"text": "x", "pinned": true}`, "pinned"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			status, _, b := ts.Do(t, "PUT", "/ai/memory/"+list.Items[0].ID, alice, tc.body)
			if e := chattest.MustError(t, b); status != http.StatusBadRequest || e.Code != askbi.InvalidArgument || !strings.Contains(e.Message, tc.field) {
				t.Errorf("PUT %s: %d %s, want 400 naming %s", tc.body, status, b, tc.field)
			}
		})
	}

	var deleted struct{ Deleted int }
	ts.MustDo(t, http.StatusOK, "DELETE", "/ai/memory", alice, nil, &deleted)
	if deleted.Deleted != 50 {
		t.Errorf("deleted %d, want 50", deleted.Deleted)
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d memories left", len(list.Items))
	}

	// Every attempted change reaches the audit log once, by whom and how
	// it ended, without its text.
	counts := map[string]int{}
	for _, e := range ts.audit.Entries() {
		if !strings.HasPrefix(e.Action, "memory.") {
			continue
		}
		counts[e.UserID+" "+e.Action+" "+e.Outcome]++
		if e.TeamID != "acme" || e.Target.Type != access.TypeMemory || e.Auth != access.AuthSession {
			t.Errorf("audit event %+v", e)
		}
		j, _ := json.Marshal(e)
		if bytes.Contains(j, []byte("EUR")) || bytes.Contains(j, []byte("USD")) || bytes.Contains(j, []byte("April")) {
			t.Errorf("audit event holds memory text: %s", j)
		}
	}
	want := map[string]int{
		"alice memory.add ok": 51, "alice memory.add too_large": 2, "alice memory.edit ok": 1, "bob memory.edit not_found": 1,
		"alice memory.edit invalid_argument": 2, "alice memory.delete ok": 1, "bob memory.delete not_found": 1,
		"alice memory.delete not_found": 1, "alice memory.delete_all ok": 1,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("memory audit mismatch (-want +got):\n%s", diff)
	}
}
