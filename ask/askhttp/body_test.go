package askhttp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/internal/httpjson"
)

// holdingModel is the mock model, except that a call whose last message
// says "hold" reports itself on started and waits until release closes.
type holdingModel struct {
	ask.Provider
	started chan struct{}
	release chan struct{}
}

func (m holdingModel) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	if n := len(req.Messages); n > 0 && strings.Contains(req.Messages[n-1].Text, "hold") {
		m.started <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
			return ask.ModelReply{}, ctx.Err()
		}
	}
	return m.Provider.Complete(ctx, req, onText)
}

// readSpy records whether its body was read.
type readSpy struct {
	r    io.Reader
	read bool
}

func (s *readSpy) Read(p []byte) (int, error) {
	s.read = true
	return s.r.Read(p)
}

// message is a message body of exactly size bytes saying say.
func message(t *testing.T, say string, size int) string {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"message": say})
	if len(b) > size {
		t.Fatalf("%q needs more than %d bytes", say, size)
	}
	b, _ = json.Marshal(map[string]string{"message": say + strings.Repeat(".", size-len(b))})
	return string(b)
}

// TestMessageBytesInFlight: the bytes of message bodies are bounded per
// user and in all, for as long as their turns run. Three small messages
// of alice's held in their turns take 1,800 of her 2,000 bytes: a fourth
// of 600 is refused 429 with Retry-After, and its conversation gets
// nothing; bob's 1,300 would pass the handler's 3,000, and is refused,
// while his 900 fit (and reach the assistant, which answers 404 for an
// unknown conversation). Once the turns end, alice's next 600 pass.
func TestMessageBytesInFlight(t *testing.T) {
	m := holdingModel{Provider: mock.New(), started: make(chan struct{}), release: make(chan struct{})}
	ts := MustServer(t, func(c *config) {
		c.provider = m
		c.opts = askhttp.Options{MessageBytesInFlight: 3000, UserMessageBytesInFlight: 2000}
	})
	alice, bob := token("alice"), token("bob")
	var once sync.Once
	release := func() { once.Do(func() { close(m.release) }) }
	defer release()
	// send posts a message from any goroutine and returns the status,
	// the headers and the error body, if any.
	send := func(tok, conv, body string) (int, http.Header, httpjson.ErrorBody) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", ts.URL+"/ai/conversations/"+conv+"/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := ts.HTTP.Do(req)
		if err != nil {
			return 0, nil, httpjson.ErrorBody{Message: err.Error()}
		}
		defer res.Body.Close()
		var doc httpjson.ErrorDoc
		json.NewDecoder(res.Body).Decode(&doc)
		return res.StatusCode, res.Header, doc.Error
	}
	var wg sync.WaitGroup
	held := message(t, "hold", 600)
	for range 3 {
		conv := ts.MustConversation(t, alice)
		wg.Go(func() {
			if status, _, e := send(alice, conv, held); status != http.StatusOK {
				t.Errorf("held turn: %d %+v", status, e)
			}
		})
	}
	for range 3 {
		<-m.started
	}
	fourth := ts.MustConversation(t, alice)
	if status, h, e := send(alice, fourth, message(t, "a fourth", 600)); status != http.StatusTooManyRequests ||
		e.Code != askbi.RateLimited || h.Get("Retry-After") == "" || !strings.Contains(e.Message, "at most 2000 bytes") {
		t.Errorf("alice's fourth message: %d %+v Retry-After %q; want 429 rate_limited naming her 2000 bytes", status, e, h.Get("Retry-After"))
	}
	var view struct{ Messages []any }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+fourth, alice, nil, &view)
	if len(view.Messages) != 0 {
		t.Errorf("the refused message changed its conversation: %v", view.Messages)
	}
	if status, _, e := send(bob, "conv_unknown", message(t, "bob", 1300)); status != http.StatusTooManyRequests || e.Code != askbi.RateLimited {
		t.Errorf("bob's 1,300 bytes past the handler's bound: %d %+v, want 429", status, e)
	}
	// Its Content-Length said so: a client that waits for 100 Continue
	// sends none of it.
	body := &readSpy{r: strings.NewReader(message(t, "bob", 1300))}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", ts.URL+"/ai/conversations/conv_unknown/messages", body)
	req.ContentLength = 1300
	req.Header.Set("Authorization", "Bearer "+bob)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	waits := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Hour}}
	if res, err := waits.Do(req); err != nil || res.StatusCode != http.StatusTooManyRequests || body.read {
		t.Errorf("bob's 1,300 bytes with Expect: 100-continue: %v %v, body read %v; want 429 before the body", res, err, body.read)
	} else {
		res.Body.Close()
	}
	if status, _, e := send(bob, "conv_unknown", message(t, "bob", 900)); status != http.StatusNotFound {
		t.Errorf("bob's 900 bytes within the bound: %d %+v, want the assistant's 404", status, e)
	}
	release()
	wg.Wait()
	if status, _, e := send(alice, "conv_unknown", message(t, "after", 600)); status != http.StatusNotFound {
		t.Errorf("alice after her turns ended: %d %+v, want the assistant's 404", status, e)
	}
}

// pausingBody gives its first n bytes, then closes paused and waits for
// resume before it gives the rest.
type pausingBody struct {
	r              io.Reader
	n              int
	paused, resume chan struct{}
}

func (b *pausingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		close(b.paused)
		<-b.resume
		b.n = -1
	}
	if b.n > 0 && len(p) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	if b.n > 0 {
		b.n -= n
	}
	return n, err
}

// TestSlowMessageHoldsWhatItSent: a message sent slowly holds the bytes
// that arrived, not the length it announced. Alice's 1,900-byte message
// paused after 500 bytes leaves her 1,500 of 2,000: a 600-byte message
// passes (to the assistant's 404), a 1,600-byte one is refused; once
// the slow one ends, its bytes are free again.
func TestSlowMessageHoldsWhatItSent(t *testing.T) {
	ts := MustServer(t, func(c *config) { c.opts = askhttp.Options{UserMessageBytesInFlight: 2000} })
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	slow := &pausingBody{r: strings.NewReader(message(t, "slowly", 1900)), n: 500, paused: make(chan struct{}), resume: make(chan struct{})}
	req := httptest.NewRequestWithContext(t.Context(), "POST", "/ai/conversations/"+conv+"/messages", slow)
	req.ContentLength = 1900
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { defer close(done); ts.handler.ServeHTTP(rec, req) }()
	<-slow.paused // the handler read the 500 bytes and waits for more
	if status, _, b := ts.Do(t, "POST", "/ai/conversations/conv_unknown/messages", alice, message(t, "fits", 600)); status != http.StatusNotFound {
		t.Errorf("600 bytes beside a slow message's 500: %d %s, want the assistant's 404", status, b)
	}
	if status, _, b := ts.Do(t, "POST", "/ai/conversations/conv_unknown/messages", alice, message(t, "too much", 1600)); status != http.StatusTooManyRequests {
		t.Errorf("1,600 bytes beside a slow message's 500: %d %s, want 429", status, b)
	}
	close(slow.resume)
	<-done
	if rec.Code != http.StatusOK {
		t.Errorf("the slow message: %d %s", rec.Code, rec.Body)
	}
	if status, _, b := ts.Do(t, "POST", "/ai/conversations/conv_unknown/messages", alice, message(t, "after", 1900)); status != http.StatusNotFound {
		t.Errorf("1,900 bytes after the slow message ended: %d %s, want the assistant's 404", status, b)
	}
}

// TestAttachmentSizeWhileDecoding: an image whose base64 text is longer
// than any image within the limit is refused too_large naming it,
// whatever it claims to be; so is a text file over its limit, however
// it is escaped; the body cap is ask.MaxAttachmentBodyBytes and a larger
// body names it. Nothing is saved.
func TestAttachmentSizeWhileDecoding(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	img := map[string]any{"name": "chart.png", "media_type": "image/png", "data": pngBase64(t)}
	tinyName := map[string]any{"name": "tiny.png", "media_type": "image/png", "data": strings.Repeat("A", base64.StdEncoding.EncodedLen(ask.MaxImageBytes)+4)}
	escaped := `{"name":"a.txt","text":"` + strings.Repeat(`\n`, ask.MaxTextFileBytes+1) + `"}`
	for _, tt := range []struct {
		name, body string
		status     int
		say        string
	}{
		{"image over 8 MiB as base64", `{"message":"look","attachments":[` + mustJSON(t, img) + `,` + mustJSON(t, tinyName) + `]}`,
			http.StatusRequestEntityTooLarge, "attachments[1]: an image is at most 8 MiB"},
		{"text over 1 MiB, escaped", `{"message":"look","attachments":[` + escaped + `]}`,
			http.StatusRequestEntityTooLarge, "attachments[0]: a text file is at most 1 MiB"},
		{"text over 1 MiB as sent", `{"message":"look","attachments":[{"name":"a.txt","text":"` + strings.Repeat("a", 7*ask.MaxTextFileBytes) + `"}]}`,
			http.StatusRequestEntityTooLarge, "attachments[0]: a text file is at most 1 MiB"},
		{"12 MiB, not base64 either: the size is checked first", `{"message":"look","attachments":[{"name":"a.png","media_type":"image/png","data":"` +
			strings.Repeat("A", 12<<20) + `!"}]}`, http.StatusRequestEntityTooLarge, "attachments[0]: an image is at most 8 MiB"},
		{"data not a string", `{"message":"look","attachments":[{"name":"a.png","media_type":"image/png","data":12}]}`,
			http.StatusBadRequest, "attachments.data: must be a string"},
		{"body over the cap", `{"message":"look","attachments":[{"name":"a.txt","text":"` + strings.Repeat("a", ask.MaxAttachmentBodyBytes) + `"}]}`,
			http.StatusRequestEntityTooLarge, "body: at most " + httpjson.Size(ask.MaxAttachmentBodyBytes)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conv := ts.MustConversation(t, alice)
			status, _, b := ts.Do(t, "POST", "/ai/conversations/"+conv+"/messages", alice, tt.body)
			if e := chattest.MustError(t, b); status != tt.status || e.Message != tt.say {
				t.Errorf("got %d %+v, want %d %q", status, e, tt.status, tt.say)
			}
			var view struct{ Messages []any }
			ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
			if len(view.Messages) != 0 {
				t.Errorf("a refused message was saved: %v", view.Messages)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
