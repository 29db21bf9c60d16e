package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/internal/pgtest"
)

// tsTasksReport is what mcptest/tstasks.mjs prints.
type tsTasksReport struct {
	Client      string         `json:"client"`
	ExtTasks    string         `json:"ext_tasks"`
	Era         string         `json:"era"`
	ServerTasks bool           `json:"server_tasks"`
	Requests    map[string]int `json:"requests"`
	First       struct {
		Kind   string `json:"kind"`
		TaskID string `json:"task_id"`
		Status string `json:"status"`
		Polls  int    `json:"polls"`
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
			ContentTypes      []string       `json:"content_types"`
		} `json:"result"`
	} `json:"first"`
	Second struct {
		Kind              string `json:"kind"`
		TaskID            string `json:"task_id"`
		StatusAfterCancel string `json:"status_after_cancel"`
		ResultAfterCancel bool   `json:"result_after_cancel"`
	} `json:"second"`
}

// TestTypeScriptSDKTasks: the TypeScript MCP SDK's 2026-07-28 client
// with its Tasks support (@modelcontextprotocol/client and
// @modelcontextprotocol/ext-tasks, mcptest/tstasks.mjs) runs a slow
// preview on the demo warehouse, which becomes a task the SDK polls to
// its result; then a second, cancelled once its query runs: the query is
// gone from the warehouse (pg_stat_activity) long before the executor's
// deadline would end it.
func TestTypeScriptSDKTasks(t *testing.T) {
	bin := mustTools(t)
	ta := MustApp(t, func(c *config) {
		c.inMemory, c.databaseURL = false, pgtest.MustDatabase(t)
		c.mcpTaskAfter = 50 * time.Millisecond
	})
	owner, err := sqlx.Open("postgres", ta.creds.WarehouseDatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	const marker = "generate_series(1, 100003) a"
	running := func() int {
		var n int
		if err := owner.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, marker); err != nil {
			t.Fatal(err)
		}
		return n
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("mcptest", "tstasks.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := peerCmd(ctx, t, bin, "node", script)
	cmd.Env = append(cmd.Env, "ASKBI_MCP_TOOLS="+filepath.Dir(filepath.Dir(bin)), "ASKBI_MCP_URL="+ta.url+"/mcp",
		"ASKBI_API_KEY="+ta.apiKey(t, "alice"), "ASKBI_CONNECTION=conn_acme_wh",
		// Long enough to outlast After (50 ms), well within the 15 s deadline.
		"ASKBI_SQL1=SELECT count(*) AS n FROM generate_series(1, 3000) a, generate_series(1, 4000) b",
		// Past the deadline unless cancelled.
		"ASKBI_SQL2=SELECT count(*) AS n FROM "+marker+", generate_series(1, 100000) b")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, log bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if strings.HasPrefix(line, "TASK2 ") {
			pollUntil(t, 10*time.Second, "the second preview's query runs", func() bool { return running() > 0 })
			fmt.Fprintln(stdin, "go")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tstasks: %v\n%s\n%s", err, stdout.Bytes(), log.Bytes())
	}
	took := pollUntil(t, 10*time.Second, "the cancelled task's query ends", func() bool { return running() == 0 })
	t.Logf("the cancelled task's query ended %s after the client's cancel returned", took.Round(10*time.Millisecond))

	var r tsTasksReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("tstasks output %q: %v\n%s", stdout.Bytes(), err, log.Bytes())
	}
	t.Logf("@modelcontextprotocol/client %s, ext-tasks %s: requests %v", r.Client, r.ExtTasks, r.Requests)
	if r.Client != "2.3.1" || r.ExtTasks != "0.2.2" || r.Era != "modern" || !r.ServerTasks {
		t.Errorf("client %s, ext-tasks %s, era %q, server declares tasks %v; want 2.3.1, 0.2.2, modern, true", r.Client, r.ExtTasks, r.Era, r.ServerTasks)
	}
	f := r.First
	if f.Kind != "task" || f.TaskID == "" || f.Status != "completed" || f.Polls < 1 || f.Result.IsError ||
		f.Result.StructuredContent["row_count"] != 1.0 || len(f.Result.ContentTypes) == 0 {
		t.Errorf("the first preview = %+v; want a task polled to its one-row result", f)
	}
	if rows, _ := f.Result.StructuredContent["rows"].([]any); len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprint([]any{12000000.0}) {
		t.Errorf("the first preview's rows = %v, want [[12000000]]", f.Result.StructuredContent["rows"])
	}
	s := r.Second
	if s.Kind != "task" || s.TaskID == "" || s.StatusAfterCancel != "cancelled" || s.ResultAfterCancel || r.Requests["tasks/cancel"] != 1 {
		t.Errorf("the second preview = %+v, requests %v; want a task, cancelled with tasks/cancel, no result", s, r.Requests)
	}
}
