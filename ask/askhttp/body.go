package askhttp

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/httpjson"
)

// DefaultMessageBytesInFlight is the default bound on the bytes of
// message bodies one handler holds at once: two messages of the largest
// size ([ask.MaxAttachmentBodyBytes]).
const DefaultMessageBytesInFlight = 2 * ask.MaxAttachmentBodyBytes

// budget counts the bytes of message bodies in flight, in all and per
// user, from the moment they are read until their turn ends. It never
// waits: a charge past a bound fails at once. It is safe for concurrent
// use.
type budget struct {
	max, perUser int64

	mu     sync.Mutex
	used   int64
	byUser map[string]int64
}

func newBudget(max, perUser int64) *budget {
	return &budget{max: max, perUser: perUser, byUser: map[string]int64{}}
}

// charge adds n bytes to user's, or, past a bound, adds nothing and
// returns RateLimited with a retry hint.
func (b *budget) charge(user string, n int64) error {
	return b.take(user, n, true)
}

// fits returns charge's error without charging anything: for a body
// whose length is known, refused before a byte of it is read (a client
// that sent Expect: 100-continue then sends none).
func (b *budget) fits(user string, n int64) error {
	return b.take(user, n, false)
}

func (b *budget) take(user string, n int64, add bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.byUser[user]+n > b.perUser:
		return askbi.Retry(askbi.RateLimited, time.Second,
			"your messages in flight hold too much data (at most %s at once); wait for an answer before sending more", httpjson.Size(b.perUser))
	case b.used+n > b.max:
		return askbi.Retry(askbi.RateLimited, time.Second, "the assistant is receiving too much message data at once; try again in a moment")
	}
	if add {
		b.used += n
		b.byUser[user] += n
	}
	return nil
}

// release gives back n bytes of user's.
func (b *budget) release(user string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byUser[user] -= n; b.byUser[user] <= 0 {
		delete(b.byUser, user)
	}
}

// imageData is an attachment's "data": an image's base64 text, decoded
// into bytes as the body is decoded, so the text is never copied into a
// string. A text longer than any image within ask.MaxImageBytes is not
// decoded (tooLarge), nor one that is not base64 (invalid); the handler
// refuses both naming the attachment.
type imageData struct {
	bytes    []byte
	tooLarge bool
	invalid  bool
}

// maxImageText is the base64 text of the largest image allowed.
var maxImageText = base64.StdEncoding.EncodedLen(ask.MaxImageBytes)

func (d *imageData) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	if len(raw) < 2 || raw[0] != '"' {
		return &json.UnmarshalTypeError{Value: "data", Type: reflect.TypeFor[string]()}
	}
	text := raw[1 : len(raw)-1]
	for _, c := range text {
		if c == '\\' { // escaped, as in "\/": rare, so decoded the slow way
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			text = []byte(s)
			break
		}
	}
	if len(text) > maxImageText {
		d.tooLarge = true
		return nil
	}
	d.bytes = make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(d.bytes, text)
	d.bytes, d.invalid = d.bytes[:n], err != nil
	return nil
}

// textData is an attachment's "text": a text longer than
// ask.MaxTextFileBytes is not kept (tooLarge), and one whose JSON is
// longer than the longest such text can be (every byte escaped as
// \u00XX) is not even decoded.
type textData struct {
	text     string
	tooLarge bool
}

func (t *textData) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	if len(raw) > 6*ask.MaxTextFileBytes+2 {
		t.tooLarge = true
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return &json.UnmarshalTypeError{Value: "text", Type: reflect.TypeFor[string]()}
	}
	if len(s) > ask.MaxTextFileBytes {
		t.tooLarge = true
		return nil
	}
	t.text = s
	return nil
}
