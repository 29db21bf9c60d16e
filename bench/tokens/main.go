// Command tokens counts the tokens of the MCP server's run_dataset
// answers at the default response budget, with the cl100k_base and
// o200k_base BPE tokenizers, for six kinds of 1,000-row results. It is a
// module of its own (go.mod here), so the tokenizers stay out of askbi's
// dependencies:
//
//	cd bench/tokens && go run .
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
)

type kind struct {
	name    string
	columns []string
	row     func(i int, r *rand.Rand) []any
}

var words = strings.Fields("the pricing page drew more visitors after the launch while signups from search rose and churn fell in the second week of the quarter for most regions")

var kinds = []kind{
	{"dates and integers", []string{"day", "signups"}, func(i int, r *rand.Rand) []any {
		return []any{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02"), int64(r.IntN(100000))}
	}},
	{"dates, codes, integers and decimals", []string{"day", "country", "orders", "revenue"}, func(i int, r *rand.Rand) []any {
		codes := []string{"DE", "FR", "US", "GB", "JP", "BR", "IN", "ES"}
		return []any{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i/8).Format("2006-01-02"), codes[i%8], int64(r.IntN(5000)),
			json.Number(fmt.Sprintf("%d.%02d", r.IntN(100000), r.IntN(100)))}
	}},
	{"64-bit IDs and floats", []string{"user_id", "score"}, func(i int, r *rand.Rand) []any {
		return []any{int64(r.Int64()), r.Float64() * 1000}
	}},
	{"small integers (10 columns of 0-99)", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, func(i int, r *rand.Rand) []any {
		row := make([]any, 10)
		for j := range row {
			row[j] = int64(r.IntN(100))
		}
		return row
	}},
	{"short codes (4 columns of 2 letters)", []string{"a", "b", "c", "d"}, func(i int, r *rand.Rand) []any {
		codes := []string{"DE", "FR", "US", "GB", "JP", "BR", "IN", "ES"}
		return []any{codes[r.IntN(8)], codes[r.IntN(8)], codes[r.IntN(8)], codes[r.IntN(8)]}
	}},
	{"text", []string{"day", "note"}, func(i int, r *rand.Rand) []any {
		n := 6 + r.IntN(10)
		w := make([]string, n)
		for j := range w {
			w[j] = words[r.IntN(len(words))]
		}
		return []any{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02"), strings.Join(w, " ")}
	}},
}

func main() {
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	encs := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		e, err := tiktoken.GetEncoding(name)
		if err != nil {
			panic(err)
		}
		encs[name] = e
	}
	count := func(enc, s string) int { return len(encs[enc].Encode(s, nil, nil)) }

	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	catalog := workspace.NewMemoryCatalog()
	catalog.PutConnection(workspace.Connection{ID: "conn", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true})
	tables := map[string]*dataexec.Table{}
	r := rand.New(rand.NewPCG(1, 2))
	for i, k := range kinds {
		sql := fmt.Sprintf("SELECT * FROM t%d", i)
		t := &dataexec.Table{Columns: k.columns}
		for j := range 1000 {
			t.Rows = append(t.Rows, k.row(j, r))
		}
		tables[sql] = t
		var fs workspace.Fields
		for _, c := range k.columns {
			fs = append(fs, workspace.Field{Name: c, Path: []string{c}})
		}
		catalog.PutDataset(workspace.Dataset{ID: fmt.Sprintf("ds_%d", i), TeamID: "acme", ProjectID: "growth", Name: k.name, Version: 1,
			Request: workspace.Request{ConnectionID: "conn", SQL: sql, Fields: fs}})
	}
	exec := dataexec.NewExecutor(catalog, dataexec.SourceMap{"conn": dataexec.NewTableSource(tables)}, nil)
	checker := access.NewChecker(dir, nil)
	gate := access.NewGate(checker, nil)
	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	alice, _ := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
	secret, _, err := keys.Create(ctx, alice, access.KeyRequest{Name: "m", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(mcpserver.New(exec, gate, keys.Verify, &mcpserver.Options{BaseURL: "https://bi.example.com"}))
	defer srv.Close()

	fmt.Printf("budget %d bytes; 1,000-row datasets; run_dataset answers as served\n\n", mcpserver.DefaultResultBytes)
	fmt.Println("| rows of | rows in the answer | bytes (whole result) | cl100k tokens | o200k tokens | bytes/token (cl100k, o200k) | tokens of content only (cl100k, o200k) | bytes, tokens of structuredContent alone (cl100k, o200k) |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, k := range kinds {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_dataset","arguments":{"dataset_id":"ds_%d"}}}`, i)
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			panic(fmt.Sprintf("%s: %s", err, b))
		}
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		json.Unmarshal(msg.Result, &res)
		var sc struct {
			Rows []any `json:"rows"`
		}
		json.Unmarshal(res.StructuredContent, &sc)
		whole := string(msg.Result)
		var content []string
		for _, c := range res.Content {
			content = append(content, c.Text)
		}
		text := strings.Join(content, "\n")
		c1, o1 := count("cl100k_base", whole), count("o200k_base", whole)
		fmt.Printf("| %s | %d | %d | %d | %d | %.2f, %.2f | %d, %d | %d: %d, %d |\n", k.name, len(sc.Rows), len(whole), c1, o1,
			float64(len(whole))/float64(c1), float64(len(whole))/float64(o1),
			count("cl100k_base", text), count("o200k_base", text),
			len(res.StructuredContent), count("cl100k_base", string(res.StructuredContent)), count("o200k_base", string(res.StructuredContent)))
	}
}
