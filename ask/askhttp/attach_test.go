package askhttp_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/internal/chattest"
)

func pngBase64(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestAttachedCSV is the "done when" through the API: a CSV
// attached to a message is asked about through the mock model, and the
// opened conversation names it (name, type and size only).
func TestAttachedCSV(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	csv := "country,signups\nUS,3410\nDE,3322\n"
	events := ts.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{
		"message":     "Which country has the most signups?",
		"attachments": []any{map[string]any{"name": "signups.csv", "text": csv}},
	})
	chattest.CheckOrder(t, events)
	var answer string
	for _, e := range events {
		if e.Type == ask.EventMessageCompleted {
			answer = e.Text
		}
	}
	if want := "the largest signups is 3410, for US"; !strings.Contains(answer, want) {
		t.Errorf("answer = %q, want it to say %q", answer, want)
	}
	var view struct {
		Messages []struct {
			Role        string           `json:"role"`
			Attachments []map[string]any `json:"attachments"`
		} `json:"messages"`
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	want := map[string]any{"name": "signups.csv", "type": "text/csv", "size": float64(len(csv))}
	if len(view.Messages) == 0 || len(view.Messages[0].Attachments) != 1 || !equalMaps(view.Messages[0].Attachments[0], want) {
		t.Errorf("opened conversation messages = %+v, want the question naming %v", view.Messages, want)
	}
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAttachmentErrors: each refusal answers before the turn, with its
// code, its status and a message naming the limit or the problem.
func TestAttachmentErrors(t *testing.T) {
	ts := MustServer(t, nil)
	textOnly := MustServer(t, func(c *config) { c.provider = &mock.Provider{TextOnly: true} })
	alice := token("alice")
	file := map[string]any{"name": "a.txt", "text": "x"}
	img := map[string]any{"name": "chart.png", "media_type": "image/png", "data": pngBase64(t)}
	tests := []struct {
		name   string
		ts     *testServer
		atts   []any
		status int
		code   string
		say    string
	}{
		{"4 attachments", ts, []any{file, file, file, file}, http.StatusRequestEntityTooLarge, "too_large", "at most 3 per message"},
		{"text over 1 MiB", ts, []any{map[string]any{"name": "a.log", "text": strings.Repeat("a", ask.MaxTextFileBytes+1)}},
			http.StatusRequestEntityTooLarge, "too_large", "at most 1 MiB"},
		{"executable", ts, []any{map[string]any{"name": "a.exe", "text": "MZ"}}, http.StatusNotImplemented, "unsupported", "not a supported file"},
		{"PNG header on an executable", ts, []any{map[string]any{"name": "a.png", "media_type": "image/png",
			"data": base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"))}},
			http.StatusNotImplemented, "unsupported", "PNG"},
		{"not base64", ts, []any{map[string]any{"name": "a.png", "media_type": "image/png", "data": "%%%"}}, http.StatusBadRequest, "invalid_argument", "base64"},
		{"no name", ts, []any{map[string]any{"text": "x"}}, http.StatusBadRequest, "invalid_argument", "name"},
		{"image on a text-only model", textOnly, []any{img}, http.StatusNotImplemented, "unsupported", "cannot read images"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := tt.ts.MustConversation(t, alice)
			status, _, b := tt.ts.Do(t, "POST", "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "look", "attachments": tt.atts})
			e := chattest.MustError(t, b)
			if status != tt.status || string(e.Code) != tt.code || !strings.Contains(e.Message, tt.say) {
				t.Errorf("got %d %s %q, want %d %s saying %q", status, e.Code, e.Message, tt.status, tt.code, tt.say)
			}
			var view struct{ Messages []any }
			tt.ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
			if len(view.Messages) != 0 {
				t.Errorf("a refused message was saved: %v", view.Messages)
			}
		})
	}
	// An image on a model that reads them runs.
	conv := ts.MustConversation(t, alice)
	events := ts.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "what is this?", "attachments": []any{img}})
	chattest.CheckOrder(t, events)
}
