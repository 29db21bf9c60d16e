package datahttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/datahttp"
	"github.com/askbi/askbi/workspace"
)

// Example serves the Data API over one dataset and reads its rows, as the
// MCP tool run_dataset would, with the same access checks and caps.
func Example() {
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleViewer, access.AllProjects())
	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true})
	cat.PutDataset(workspace.Dataset{ID: "ds1", TeamID: "acme", ProjectID: "growth", Name: "Signups", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: "SELECT week, signups FROM signups",
			Fields: workspace.Fields{{Name: "week", Path: []string{"week"}}, {Name: "signups", Path: []string{"signups"}}}}})
	warehouse := dataexec.NewTableSource(map[string]*dataexec.Table{"SELECT week, signups FROM signups": {
		Columns: []string{"week", "signups"}, Rows: [][]any{{"2026-11-02", int64(120)}, {"2026-11-09", int64(95)}},
	}})
	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"wh": warehouse}, nil)
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	// The host's login; a real one reads its session cookie or token.
	session := func(*http.Request) (access.Principal, error) {
		return access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}, nil
	}
	srv := httptest.NewServer(datahttp.New(exec, gate, session, nil))
	defer srv.Close()

	for _, path := range []string{"/api/datasets/ds1/data", "/api/datasets/ds_other/data"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		var out struct {
			Rows  [][]any
			Error struct{ Code string }
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			panic(err)
		}
		res.Body.Close()
		fmt.Printf("%s %s rows %v error %q\n", path, res.Status, out.Rows, out.Error.Code)
	}
	// Output:
	// /api/datasets/ds1/data 200 OK rows [[2026-11-02 120] [2026-11-09 95]] error ""
	// /api/datasets/ds_other/data 404 Not Found rows [] error "not_found"
}
