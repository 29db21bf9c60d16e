package ask_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
)

// chunked streams a fixed answer in the given pieces, then calls one tool
// with the answer as argument on request, to show what a reply can carry.
type chunked struct {
	mu     sync.Mutex
	pieces []string
	call   *ask.ToolCall // made in the first reply, when set
	seen   []ask.ModelRequest
}

func (m *chunked) Complete(_ context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	m.mu.Lock()
	m.seen = append(m.seen, req)
	first := len(m.seen) == 1
	m.mu.Unlock()
	if first && m.call != nil {
		return ask.ModelReply{ToolCalls: []ask.ToolCall{*m.call}}, nil
	}
	for _, p := range m.pieces {
		onText(p)
	}
	return ask.ModelReply{Text: strings.Join(m.pieces, "")}, nil
}

// TestStreamedSecretsRedacted splits an answer holding a secret at every
// offset: the deltas, joined, never hold the secret.
func TestStreamedSecretsRedacted(t *testing.T) {
	secrets := map[string]string{
		"openai key":   "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
		"database URL": "postgres://reader:s3cr3tPassw0rd@db:5432/wh",
		"bearer":       "Bearer abc.def-ghi_jklmnop",
	}
	for name, secret := range secrets {
		t.Run(name, func(t *testing.T) {
			text := "The value is " + secret + " and that is all."
			mask := secret
			if i := strings.Index(secret, "s3cr3t"); i >= 0 {
				mask = "s3cr3tPassw0rd"
			}
			if strings.HasPrefix(secret, "Bearer ") {
				mask = "abc.def-ghi_jklmnop"
			}
			var splits [][]string
			for i := 1; i < len(text); i++ {
				splits = append(splits, []string{text[:i], text[i:]})
			}
			var threes []string
			for i := 0; i < len(text); i += 3 {
				threes = append(threes, text[i:min(i+3, len(text))])
			}
			splits = append(splits, threes)
			for _, pieces := range splits {
				model := &chunked{pieces: pieces}
				e := newEnv(t, model)
				conv := e.MustConversation(t, alice)
				events := e.MustSend(t, alice, conv, "tell me", nil)
				var joined strings.Builder
				for _, ev := range events {
					joined.WriteString(ev.Delta)
				}
				if strings.Contains(joined.String(), mask) {
					t.Fatalf("split %q: the joined deltas hold the secret: %q", pieces, joined.String())
				}
				if ev := find(events, ask.EventMessageCompleted); ev == nil || strings.Contains(ev.Text, mask) || ev.Text != joined.String() {
					t.Fatalf("split %q: completed %+v, deltas %q", pieces, ev, joined.String())
				}
			}
		})
	}
}

// TestHostSecretPatterns: a credential pattern the host registers is
// redacted in history, events, the work summary and what reaches the
// model.
func TestHostSecretPatterns(t *testing.T) {
	const token = "acme_session_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	model := &chunked{pieces: []string{"your token acme_ses", "sion_ABCDEFGHIJKLM", "NOPQRSTUVWXYZ is noted"},
		// A bad argument whose validation error echoes the value.
		call: &ask.ToolCall{ID: "c1", Name: "search_workspace", Arguments: json.RawMessage(`{"types":["` + token + `"]}`)}}
	e := newEnv(t, model, func(c *envConfig) {
		c.opts.Secrets = []*regexp.Regexp{regexp.MustCompile(`acme_session_[A-Z]{26}`)}
	})
	conv := e.MustConversation(t, alice)
	events := e.MustSend(t, alice, conv, "my session is "+token+", keep it", nil)
	b, _ := json.Marshal(events)
	v, _ := json.Marshal(e.MustOpen(t, alice, conv))
	m, _ := json.Marshal(model.seen)
	for where, s := range map[string]string{"events": string(b), "history and work summary": string(v), "model context": string(m)} {
		if strings.Contains(s, "ABCDEFGHIJKLM") {
			t.Errorf("%s hold the session token: %s", where, s)
		}
	}
	if !strings.Contains(string(v), "[redacted]") || !strings.Contains(string(v), `"state":"failed"`) {
		t.Errorf("history shows no redaction: %s", v)
	}
}

// leaky is a model that fails with an internal error holding its key and
// body, as a provider's SDK error may.
type leaky struct{}

func (leaky) Complete(context.Context, ask.ModelRequest, func(string)) (ask.ModelReply, error) {
	return ask.ModelReply{}, &askbi.Error{Code: askbi.Internal, Message: "The model failed.",
		Err: errors.New(`POST /v1/messages: 500 {"error":"bad key sk-ant-api03-leakleakleakleakleakleak, Authorization: Bearer tok_0123456789abcdef"}`)}
}

// TestLogRedacted: a turn's internal error reaches the log through the
// same redaction as events: no key or token of a provider's error body.
func TestLogRedacted(t *testing.T) {
	var buf bytes.Buffer
	e := newEnv(t, leaky{}, func(c *envConfig) { c.opts.Logger = slog.New(slog.NewTextHandler(&buf, nil)) })
	conv := e.MustConversation(t, alice)
	if _, err := e.send(alice, conv, "hello", nil); askbi.ErrorCode(err) != askbi.Internal {
		t.Fatalf("Send: %v; want the internal error", err)
	}
	out := buf.String()
	if !strings.Contains(out, "ask: turn failed") {
		t.Fatalf("the failure was not logged:\n%s", out)
	}
	if strings.Contains(out, "leakleak") || strings.Contains(out, "tok_0123456789") {
		t.Errorf("the log holds the provider's secrets:\n%s", out)
	}
}
