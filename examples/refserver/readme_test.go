package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chatDocs are the documents whose shell blocks make up one session
// against the reference server, in the order they run: the chat API
// starts the server and signs in, connections and the Data API go on with
// its variables.
var chatDocs = []string{"docs/chat-api.md", "docs/connections.md", "docs/data-api.md"}

// startCommand is the one way the documents start the reference server.
const startCommand = "go run ./examples/refserver -credentials-file creds.json"

// TestREADMEChat runs every ```sh block of chatDocs top to bottom against a
// fresh server, with every curl failing on an HTTP error, so the
// documented commands, IDs and fields stay true.
func TestREADMEChat(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("ASKBI_REQUIRE_MCP_TOOLS") == "1" {
				t.Fatalf("%s is not installed", tool)
			}
			t.Skipf("SKIPPING: %s is not installed", tool)
		}
	}
	var script strings.Builder
	for _, name := range chatDocs {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
		if len(blocks) == 0 {
			t.Fatalf("%s has no sh blocks", name)
		}
		for _, m := range blocks {
			script.WriteString(m[1])
		}
	}
	ta := MustApp(t, nil)
	dir := t.TempDir()
	if err := ta.writeCredentials(filepath.Join(dir, "creds.json")); err != nil {
		t.Fatal(err)
	}
	body := script.String()
	// One way to start, used by every example: the README's first command,
	// with the credentials file, in the repository root. A block that
	// starts a second server collides with it on port 8080, and reads a
	// credentials file that server never wrote.
	if strings.Contains(body, "go run ") {
		t.Fatalf("a shell block of %s starts a server of its own; the examples use the one the README starts", strings.Join(chatDocs, ", "))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", chatDocs[0])); err != nil || !strings.Contains(string(b), "`"+startCommand+"`") {
		t.Errorf("%s does not name the one start command %q (%v)", chatDocs[0], startCommand, err)
	}
	if !strings.Contains(body, "BASE=http://127.0.0.1:8080\n") {
		t.Fatalf("%s no longer reaches the server at BASE=http://127.0.0.1:8080", chatDocs[0])
	}
	// The test's server stands in for it, its credentials file in the
	// folder the commands run in.
	body = strings.Replace(body, "BASE=http://127.0.0.1:8080\n", "BASE="+ta.url+"\n", 1)
	prelude := "set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 30 \"$@\"; }\n"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+body)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the commands of %s failed: %v\n%s", strings.Join(chatDocs, ", "), err, out)
	}
	for _, want := range []string{`"available":true`, `"status":"saved"`, `"deleted":0`, `oauth=connected`, `"sign_in":"signed_in"`, `"started":true`,
		// The connect path ends in data: the connected tool ran, and its answer charts.
		`{"tool":"Demo_Analytics__pageviews_by_week","summary":"Answer from Demo Analytics"}`, `{"kind":"chart","title":"Pageviews from Demo Analytics by week","chart_type":"line","labels":8`,
		`/datasets/ds_signups_country"`, `"row_count":1`, `/charts/chart_mrr"`, `"chart":"` + ta.url + `/charts/`,
		"the largest signups is 3410, for US", "I received dot.png (png image", `"code":"too_large"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the commands' output lacks %s:\n%s", want, out)
		}
	}
}
