package httpjson_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/httpjson"
)

// target is a body as the SDK's handlers decode them: a struct, a list
// of structs and a JSON value kept as sent.
type target struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Context []targetRef     `json:"context"`
	Args    json.RawMessage `json:"arguments"`
}

type targetRef struct {
	ID string `json:"id"`
}

// decode decodes body, sent with the Content-Type headers cts (none
// when empty), into a target, with max as the body cap.
func decode(body string, max int64, cts ...string) (target, error) {
	r := httptest.NewRequest("POST", "/x", strings.NewReader(body))
	for _, ct := range cts {
		r.Header.Add("Content-Type", ct)
	}
	var v target
	err := httpjson.DecodeMax(httptest.NewRecorder(), r, &v, true, max, nil)
	return v, err
}

// TestDecodeContentType: a body must be sent as application/json, so a
// cross-site HTML form (text/plain, urlencoded, multipart) cannot post
// JSON; parameters and case do not matter; no body needs no type.
func TestDecodeContentType(t *testing.T) {
	for _, tc := range []struct {
		name string
		cts  []string
		ok   bool
	}{
		{"application/json", []string{"application/json"}, true},
		{"with charset", []string{"application/json; charset=utf-8"}, true},
		{"upper case", []string{"Application/JSON"}, true},
		{"missing", nil, false},
		{"empty", []string{""}, false},
		{"text/plain (a form's enctype)", []string{"text/plain"}, false},
		{"urlencoded", []string{"application/x-www-form-urlencoded"}, false},
		{"multipart", []string{"multipart/form-data; boundary=x"}, false},
		{"application/jsonx", []string{"application/jsonx"}, false},
		{"text/json", []string{"text/json"}, false},
		{"application/json-seq", []string{"application/json-seq"}, false},
		{"two headers", []string{"text/plain", "application/json"}, false},
		{"malformed parameters", []string{"application/json; charset"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := decode(`{"name":"carol"}`, httpjson.MaxBodyBytes, tc.cts...)
			if tc.ok {
				if err != nil || v.Name != "carol" {
					t.Errorf("got %+v, %v; want carol decoded", v, err)
				}
				return
			}
			if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != "Content-Type: must be application/json" || v.Name != "" {
				t.Errorf("got %+v, %v; want invalid_argument naming Content-Type, nothing decoded", v, err)
			}
		})
	}
	// No body, no type: an empty body where one is optional.
	r := httptest.NewRequest("POST", "/x", nil)
	if err := httpjson.Decode(httptest.NewRecorder(), r, &target{}, true); err != nil {
		t.Errorf("no body and no Content-Type: %v", err)
	}
}

// TestDecodeRefusesDuplicateKeys: encoding/json keeps the last of two
// equal keys, and matches keys to fields whatever their case, so a body
// with two is refused wherever they are, however they are written; equal
// keys in different objects are not duplicates.
func TestDecodeRefusesDuplicateKeys(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		field      string // named by the refusal; "" for a body that decodes
	}{
		{"the login CSRF body", `{"name":"x=","name":"carol"}`, "name"},
		{"another case", `{"name":"x","NAME":"carol"}`, "NAME"},
		{"escaped", `{"name":"x","n\u0061me":"carol"}`, "name"},
		{"Kelvin sign folds to k", `{"kind":"a","\u212aind":"b"}`, "\u212aind"},
		{"nested in a list", `{"context":[{"id":"a"},{"id":"b","id":"c"}]}`, "context[1].id"},
		{"nested in a raw value", `{"arguments":{"dashboard_id":"a","filters":{"x":1,"x":2}}}`, "arguments.filters.x"},
		{"after white space and escapes", "{ \"name\" : \"a\\\"}\" ,\n \"name\":\"b\"}", "name"},
		{"equal keys in sibling objects", `{"context":[{"id":"a"},{"id":"b"}],"arguments":{"id":"c","x":{"id":"d"}}}`, ""},
		{"a key's text as a value", `{"name":"name","kind":"name"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.body, httpjson.MaxBodyBytes, "application/json")
			if tc.field == "" {
				if err != nil {
					t.Errorf("%s: %v", tc.body, err)
				}
				return
			}
			if want := tc.field + ": duplicate key"; askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != want {
				t.Errorf("%s: %v, want invalid_argument %q", tc.body, err, want)
			}
		})
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestDecodeBounds: nesting, members and list items, and key length are
// bounded as the body arrives, and a body refused stops being read; a
// Content-Length over the cap is refused before any byte is; a charge
// that fails ends the reading with its own error.
func TestDecodeBounds(t *testing.T) {
	items := func(n int) string { return `{"arguments":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}` }
	nest := func(n int) string { return `{"arguments":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}` }
	pad := strings.Repeat(" ", 1<<20) // read only when the refusal comes too late
	for _, tc := range []struct {
		name, body string
		code       askbi.Code
		say        string
	}{
		{"64 deep", nest(httpjson.MaxDepth), "", ""},
		{"65 deep", nest(httpjson.MaxDepth+1) + pad, askbi.InvalidArgument, "body: nested more than 64 deep"},
		{"100,000 deep", nest(100000), askbi.InvalidArgument, "body: nested more than 64 deep"},
		{"10,000 items", items(httpjson.MaxItems - 1), "", ""},
		{"10,001 items", items(httpjson.MaxItems) + pad, askbi.TooLarge, "body: at most 10000 members and list items"},
		{"a long key", `{"arguments":{"` + strings.Repeat("k", httpjson.MaxKeyBytes+1) + `":1}}` + pad, askbi.InvalidArgument,
			"arguments: a key is at most 1 KiB"},
		{"the longest key", `{"arguments":{"` + strings.Repeat("k", httpjson.MaxKeyBytes) + `":1}}`, "", ""},
		{"a duplicate", `{"name":"a","name":"b"}` + pad, askbi.InvalidArgument, "name: duplicate key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &countingReader{r: strings.NewReader(tc.body)}
			r := httptest.NewRequest("POST", "/x", body)
			r.Header.Set("Content-Type", "application/json")
			err := httpjson.DecodeMax(httptest.NewRecorder(), r, &target{}, false, 4<<20, nil)
			if askbi.ErrorCode(err) != tc.code || askbi.ErrorMessage(err) != tc.say && tc.code != "" {
				t.Errorf("got %v, want %s %q", err, tc.code, tc.say)
			}
			if tc.code != "" && body.n >= len(tc.body) {
				t.Errorf("read all %d bytes of a refused body", body.n)
			}
		})
	}

	t.Run("Content-Length over the cap", func(t *testing.T) {
		body := &countingReader{r: strings.NewReader(strings.Repeat(" ", 2000))}
		r := httptest.NewRequest("POST", "/x", body)
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = 2000
		err := httpjson.DecodeMax(httptest.NewRecorder(), r, &target{}, false, 1000, nil)
		if askbi.ErrorCode(err) != askbi.TooLarge || askbi.ErrorMessage(err) != "body: at most 1000 bytes" || body.n != 0 {
			t.Errorf("got %v after reading %d bytes, want too_large before reading", err, body.n)
		}
	})
	t.Run("a body over the cap without Content-Length", func(t *testing.T) {
		r := httptest.NewRequest("POST", "/x", strings.NewReader(`{"name":"`+strings.Repeat("a", 2000)+`"}`))
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = -1
		err := httpjson.DecodeMax(httptest.NewRecorder(), r, &target{}, false, 1024, nil)
		if askbi.ErrorCode(err) != askbi.TooLarge || askbi.ErrorMessage(err) != "body: at most 1 KiB" {
			t.Errorf("got %v, want too_large naming 1 KiB", err)
		}
	})
	t.Run("a charge refused", func(t *testing.T) {
		body := &countingReader{r: strings.NewReader(`{"name":"` + strings.Repeat("a", 1<<20) + `"}`)}
		r := httptest.NewRequest("POST", "/x", body)
		r.Header.Set("Content-Type", "application/json")
		var charged []int
		refused := askbi.Errorf(askbi.RateLimited, "no more")
		err := httpjson.DecodeMax(httptest.NewRecorder(), r, &target{}, false, 4<<20, func(n int) error {
			if len(charged) == 2 {
				return refused
			}
			charged = append(charged, n)
			return nil
		})
		if !errors.Is(err, refused) || body.n >= 1<<20 {
			t.Errorf("got %v after reading %d bytes, want the charge's error early", err, body.n)
		}
		total := 0
		for _, n := range charged {
			total += n
		}
		if total == 0 || total > body.n {
			t.Errorf("charged %v for %d bytes read", charged, body.n)
		}
	})
}

// TestDecodeErrors: what the decoder itself refuses still names the
// field, and an empty body is allowed only where it may be.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		body    string
		emptyOK bool
		want    error
	}{
		{``, true, nil},
		{` `, false, askbi.Errorf(askbi.InvalidArgument, "body: a JSON object is required")},
		{`{"name":1}`, true, askbi.Errorf(askbi.InvalidArgument, "name: must be a string")},
		{`{"nope":1}`, true, askbi.Errorf(askbi.InvalidArgument, "nope: unknown field")},
		{`{"name":"a"} {}`, true, askbi.Errorf(askbi.InvalidArgument, "body: must hold exactly one JSON object")},
		{`{"name":`, true, askbi.Errorf(askbi.InvalidArgument, "body: malformed JSON (cut short)")},
		{`[1]`, true, askbi.Errorf(askbi.InvalidArgument, "body: must be a JSON object")},
	} {
		r := httptest.NewRequest("POST", "/x", strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		err := httpjson.Decode(httptest.NewRecorder(), r, &target{}, tc.emptyOK)
		if diff := cmp.Diff(errText(tc.want), errText(err)); diff != "" {
			t.Errorf("%q: mismatch (-want +got):\n%s", tc.body, diff)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return string(askbi.ErrorCode(err)) + ": " + askbi.ErrorMessage(err)
}

// BenchmarkDecodeLargeBody decodes a 16 MiB body of one string (the
// shape of a message with an image) through DecodeMax and, as the
// baseline in the same run, through a bare json.Decoder:
//
//	go test -run '^$' -bench DecodeLargeBody ./internal/httpjson
func BenchmarkDecodeLargeBody(b *testing.B) {
	body := `{"name":"` + strings.Repeat("QUJD", 4<<20) + `"}`
	b.Run("DecodeMax", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			r := httptest.NewRequest("POST", "/x", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			if err := httpjson.DecodeMax(httptest.NewRecorder(), r, &target{}, false, 32<<20, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Decoder", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			d := json.NewDecoder(strings.NewReader(body))
			d.DisallowUnknownFields()
			if err := d.Decode(&target{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
