package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/dataexec"
)

// TestEncodeData checks the OAuth team spliced into a result's object.
func TestEncodeData(t *testing.T) {
	team := &teamOut{ID: "acme", Name: "Acme"}
	tests := []struct {
		name string
		data any
		team *teamOut
		want string
	}{
		{"no team", map[string]int{"a": 1}, nil, `{"a":1}`},
		{"team", map[string]int{"a": 1}, team, `{"a":1,"team":{"id":"acme","name":"Acme"}}`},
		{"empty object", struct{}{}, team, `{"team":{"id":"acme","name":"Acme"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeData(tc.data, tc.team)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("encodeData = %s, not JSON", got)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("encodeData mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeTable checks that a table's structured content, its rows
// spliced in, is what encoding/json writes for the same members.
func TestEncodeTable(t *testing.T) {
	res := dataexec.NewResult([]string{"id", "name"}, [][]any{{int64(1), "<a & b>"}, {nil, json.Number("2.5")}},
		dataexec.Meta{Truncated: true, TruncatedReason: dataexec.TruncatedRows, DataDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	head := struct {
		Dataset refOut `json:"dataset"`
	}{refOut{Type: "dataset", ID: "ds_1", Name: "Signups"}}
	want, err := json.Marshal(struct {
		Dataset refOut   `json:"dataset"`
		Columns []string `json:"columns"`
		Rows    [][]any  `json:"rows"`
		dataexec.Meta
		Team *teamOut `json:"team"`
	}{head.Dataset, res.Columns, res.Rows(), res.Meta, &teamOut{ID: "acme", Name: "Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeData(table{head, res}, &teamOut{ID: "acme", Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decodeJSON(t, want), decodeJSON(t, got)); diff != "" {
		t.Errorf("encodeData mismatch (-encoding/json +got):\n%s\ngot %s", diff, got)
	}
}

// TestPreEncode checks that a result handed to the SDK pre-encoded
// encodes as the SDK's own encoding of it does.
func TestPreEncode(t *testing.T) {
	for _, r := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "Dataset \"x\": 2 rows <ok>."}}, StructuredContent: json.RawMessage(`{"rows":[[1,"\u003c"]],"n":2}`)},
		{Content: []mcp.Content{&mcp.TextContent{Text: "t"}, &mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}},
			StructuredContent: json.RawMessage(`{}`), Meta: mcp.Meta{"k": "v"}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		enc := preEncode(r)
		if _, ok := enc.(*encodedResult); !ok {
			t.Fatalf("preEncode = %T, want *encodedResult", enc)
		}
		got, err := json.Marshal(enc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(decodeJSON(t, want), decodeJSON(t, got)); diff != "" {
			t.Errorf("preEncode mismatch (-SDK +got):\n%s\ngot %s", diff, got)
		}
	}
	// Structured content that is not encoded yet (an error's) stays.
	r := &mcp.CallToolResult{IsError: true, StructuredContent: toolError{Code: "x", Message: "y"}}
	if got := preEncode(r); got != mcp.Result(r) {
		t.Errorf("preEncode of an unencoded result = %T, want it unchanged", got)
	}
}

// TestToolResultEncoding checks that the JSON toolResult builds, the
// data's text spliced in escaped once, is byte for byte what the SDK
// writes for the same result (the size the budget counts), and what
// preEncode sends.
func TestToolResultEncoding(t *testing.T) {
	for _, tc := range []struct {
		r reply
		// raw: the data holds raw HTML characters, which this server's
		// encoders never write; the SDK escapes them when it sends the
		// answer (the structuredContent too), so the size counts fewer.
		raw bool
	}{
		{r: reply{summary: "Dataset \"x\" <b>: 2 rows.", data: json.RawMessage(`{"rows":[[1,"\u003ca \u0026 b\u003e","\u2028 é \"q\" \\"]],"n":2}`)}},
		{r: reply{summary: "t", data: map[string]any{"k": "<v>"}, extra: []mcp.Content{&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}},
		{r: reply{summary: "", data: json.RawMessage(`{}`)}},
		{r: reply{summary: "raw", data: json.RawMessage("{\"s\":\"<a> & \u2028\"}")}, raw: true},
	} {
		res, err := toolResult(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		enc, ok := res.StructuredContent.(encodedData)
		if !ok {
			t.Fatalf("toolResult's structured content is %T, want encodedData", res.StructuredContent)
		}
		sdk := *res
		sdk.StructuredContent = json.RawMessage(enc.data)
		want, err := json.Marshal(&sdk)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(enc.wire)); diff != "" && !tc.raw {
			t.Errorf("toolResult's JSON mismatch (-SDK +got):\n%s", diff)
		}
		if _, n := sized(tc.r); n != len(enc.wire) {
			t.Errorf("sized = %d, want the %d bytes toolResult writes", n, len(enc.wire))
		}
		sent, err := json.Marshal(preEncode(res))
		if diff := cmp.Diff(string(want), string(sent)); diff != "" || err != nil {
			t.Errorf("preEncode sends a mismatch (-SDK +got), %v:\n%s", err, diff)
		}
	}
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestPreEncodeResultType: a result the go-sdk marked with a resultType
// (a 2026-07-28 request's "complete") is sent with it, as the SDK's own
// encoding would; one without is sent without.
func TestPreEncodeResultType(t *testing.T) {
	for _, rt := range []string{"", "complete"} {
		res, err := toolResult(reply{summary: "2 rows.", data: json.RawMessage(`{"rows":[[1]]}`)})
		if err != nil {
			t.Fatal(err)
		}
		var r mcp.CallToolResult
		if rt != "" {
			json.Unmarshal([]byte(`{"content":[],"resultType":"`+rt+`"}`), &r) // the unexported field the SDK sets
		}
		r.Content, r.StructuredContent = res.Content, res.StructuredContent
		sdk := r
		sdk.StructuredContent = json.RawMessage(res.StructuredContent.(encodedData).data)
		want, err := json.Marshal(&sdk)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(preEncode(&r))
		if diff := cmp.Diff(decodeJSON(t, want), decodeJSON(t, got)); diff != "" || err != nil {
			t.Errorf("resultType %q: preEncode mismatch (-SDK +got), %v:\n%s", rt, err, diff)
		}
		if rt != "" && !strings.Contains(string(got), `"resultType":"complete"`) {
			t.Errorf("resultType %q: sent %s", rt, got)
		}
	}
}

// TestAnswerWriter: over HTTP, a result whose JSON was built before goes
// to the go-sdk as a stand-in, and the answer carries the JSON in its
// place, once; nothing else in the answer is taken for the stand-in,
// and without a note (not over HTTP) the result goes as it is.
func TestAnswerWriter(t *testing.T) {
	res, err := toolResult(reply{summary: "2 rows.", data: json.RawMessage(`{"rows":[[1,"askbi:answer:x"]]}`)})
	if err != nil {
		t.Fatal(err)
	}
	encoded := preEncode(res)
	wire := encoded.(*encodedResult).json
	if got := sendEncoded(context.Background(), encoded); got != encoded {
		t.Errorf("without a note, sendEncoded = %T, want the result as it is", got)
	}
	note := &answerNote{}
	ctx := context.WithValue(context.Background(), answerKey{}, note)
	sent := sendEncoded(ctx, encoded)
	standIn, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	if len(standIn) > 64 || bytes.Contains(standIn, wire) {
		t.Fatalf("the go-sdk is handed %d bytes, want a short stand-in", len(standIn))
	}
	if again := sendEncoded(ctx, encoded); again != encoded {
		t.Errorf("a second result in one request got a stand-in too")
	}
	rec := httptest.NewRecorder()
	w := &answerWriter{ResponseWriter: rec, note: note}
	// The client's id holds what a stand-in looks like: only the noted
	// one, named at random, is replaced.
	msg := `{"jsonrpc":"2.0","id":"askbi:answer:guess","result":` + string(standIn) + `}`
	if n, err := w.Write([]byte(msg)); n != len(msg) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(msg))
	}
	want := `{"jsonrpc":"2.0","id":"askbi:answer:guess","result":` + string(wire) + `}`
	if diff := cmp.Diff(want, rec.Body.String()); diff != "" {
		t.Errorf("the answer (-want +got):\n%s", diff)
	}
	// The note is spent: the same bytes again go as they are.
	rec.Body.Reset()
	w.Write([]byte(msg))
	if got := rec.Body.String(); got != msg {
		t.Errorf("a second write = %.100s, want it unchanged", got)
	}
}
