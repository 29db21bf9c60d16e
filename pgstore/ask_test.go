package pgstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/asktest"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/pgstore"
)

func newAskStores(t *testing.T) ask.Stores { return pgstore.NewAskStores(MustStore(t)) }

func TestConversationStore(t *testing.T) { asktest.RunConversationStore(t, newAskStores) }
func TestTurnStore(t *testing.T)         { asktest.RunTurnStore(t, newAskStores) }
func TestContextStore(t *testing.T)      { asktest.RunContextStore(t, newAskStores) }
func TestToolRunStore(t *testing.T)      { asktest.RunToolRunStore(t, newAskStores) }
func TestApprovalStore(t *testing.T)     { asktest.RunApprovalStore(t, newAskStores) }
func TestReceiptStore(t *testing.T)      { asktest.RunReceiptStore(t, newAskStores) }

var askT0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// TestAskJSONByteForByte stores JSON that jsonb would rewrite (spacing,
// member order, duplicate names, \u0000) and reads the same bytes back.
func TestAskJSONByteForByte(t *testing.T) {
	ctx := context.Background()
	db := MustStore(t)
	convs, approvals := pgstore.NewConversationStore(db), pgstore.NewApprovalStore(db)
	const (
		output = ` { "zz": 1, "a" : [ 1.50, 1e2, "\u0000<&>" ], "a": null } `
		args   = `{"b":{"yy":1,"x":2},"aa":"\u00e9"}`
		result = `{"status":"saved",  "chart":{"id":"ch1"}}`
	)
	if err := convs.CreateConversation(ctx, ask.Conversation{ID: "c1", TeamID: "acme", UserID: "alice", CreatedAt: askT0, UpdatedAt: askT0}); err != nil {
		t.Fatal(err)
	}
	e := ask.Entry{ID: "e1", ConversationID: "c1", TurnID: "t1", Role: ask.RoleAssistant, CreatedAt: askT0,
		ToolCalls: []ask.ToolCall{{ID: "call<1>", Name: "run_dataset", Arguments: json.RawMessage(args)}, {ID: "call2", Name: "noop"}},
		Output:    json.RawMessage(output)}
	if _, err := convs.AppendEntry(ctx, e); err != nil {
		t.Fatal(err)
	}
	entries, err := convs.Entries(ctx, "c1", 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("Entries = %v, %v; want one", entries, err)
	}
	got := entries[0]
	if diff := cmp.Diff(e.ToolCalls, got.ToolCalls); diff != "" {
		t.Errorf("ToolCalls mismatch (-want +got):\n%s", diff)
	}
	if string(got.Output) != output {
		t.Errorf("Output = %q, want %q", got.Output, output)
	}
	if err := convs.SaveToolRun(ctx, ask.ToolRun{CallID: "call1", ConversationID: "c1", State: ask.RunCompleted,
		Result: json.RawMessage(result), CreatedAt: askT0, UpdatedAt: askT0}); err != nil {
		t.Fatal(err)
	}
	runs, err := convs.ToolRuns(ctx, "c1")
	if err != nil || len(runs) != 1 || string(runs[0].Result) != result {
		t.Errorf("ToolRuns = %+v, %v; want one with Result %s", runs, err, result)
	}
	a := ask.Approval{ID: "a1", ConversationID: "c1", ToolCallID: "call1", Arguments: json.RawMessage(args),
		CreatedAt: askT0, ExpiresAt: askT0.Add(time.Minute)}
	if err := approvals.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, err := approvals.Approval(ctx, "a1"); err != nil || string(got.Arguments) != args {
		t.Errorf("Approval = %s, %v; want Arguments %s", got.Arguments, err, args)
	}
}

func TestAskInvalidJSON(t *testing.T) {
	ctx := context.Background()
	db := MustStore(t)
	convs, approvals := pgstore.NewConversationStore(db), pgstore.NewApprovalStore(db)
	if err := convs.CreateConversation(ctx, ask.Conversation{ID: "c1", CreatedAt: askT0, UpdatedAt: askT0}); err != nil {
		t.Fatal(err)
	}
	bad := json.RawMessage(`{"a":`)
	_, errEntry := convs.AppendEntry(ctx, ask.Entry{ConversationID: "c1", Output: bad})
	_, errCall := convs.AppendEntry(ctx, ask.Entry{ConversationID: "c1", ToolCalls: []ask.ToolCall{{ID: "x", Arguments: bad}}})
	tests := []struct {
		name string
		err  error
	}{
		{"AppendEntry output", errEntry},
		{"AppendEntry arguments", errCall},
		{"SaveToolRun", convs.SaveToolRun(ctx, ask.ToolRun{CallID: "x", ConversationID: "c1", Result: bad})},
		{"CreateApproval", approvals.CreateApproval(ctx, ask.Approval{ID: "a1", Arguments: bad})},
		{"PutReceipt", approvals.PutReceipt(ctx, ask.Receipt{ApprovalID: "a1", Result: bad})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if askbi.ErrorCode(tt.err) != askbi.InvalidArgument {
				t.Errorf("error = %v, want invalid_argument", tt.err)
			}
		})
	}
	if entries, err := convs.Entries(ctx, "c1", 10); err != nil || len(entries) != 0 {
		t.Errorf("Entries = %v, %v; want none stored", entries, err)
	}
}

// TestAskDeleteCascades checks the tables themselves: deleting a
// conversation leaves no child rows behind.
func TestAskDeleteCascades(t *testing.T) {
	ctx := context.Background()
	db := MustStore(t)
	s := pgstore.NewConversationStore(db)
	for _, id := range []string{"c1", "c2"} {
		if err := s.CreateConversation(ctx, ask.Conversation{ID: id, CreatedAt: askT0, UpdatedAt: askT0}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTurn(ctx, ask.Turn{ID: "t1", ConversationID: id, State: ask.TurnRunning, CreatedAt: askT0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendEntry(ctx, ask.Entry{ID: "e1", ConversationID: id, Role: ask.RoleUser, CreatedAt: askT0}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetContext(ctx, id, []ask.ContextRef{{Type: access.TypeChart, ID: "ch1"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveToolRun(ctx, ask.ToolRun{CallID: "call1", ConversationID: id, CreatedAt: askT0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteConversation(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"conversation_turns", "conversation_entries", "conversation_context", "tool_runs"} {
		var ids []string
		if err := db.Select(&ids, `SELECT conversation_id FROM `+table); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"c2"}, ids); diff != "" {
			t.Errorf("%s rows mismatch (-want +got):\n%s", table, diff)
		}
	}
}

// TestAskInternalErrorsAreSafe checks that a database failure reads as
// internal, without the driver's text in the user message.
func TestAskInternalErrorsAreSafe(t *testing.T) {
	ctx := context.Background()
	db := MustStore(t)
	convs, approvals := pgstore.NewConversationStore(db), pgstore.NewApprovalStore(db)
	if _, err := db.Exec(`DROP TABLE approval_receipts, approvals, conversation_turns, conversation_entries, conversation_context, tool_runs, conversations`); err != nil {
		t.Fatal(err)
	}
	_, errConsume := approvals.Consume(ctx, "a1", ask.Binding{}, askT0)
	_, errAppend := convs.AppendEntry(ctx, ask.Entry{ConversationID: "c1"})
	_, errPending := approvals.Pending(ctx, "c1", askT0)
	tests := []struct {
		name string
		err  error
	}{
		{"CreateConversation", convs.CreateConversation(ctx, ask.Conversation{ID: "c1"})},
		{"AppendEntry", errAppend},
		{"SetContext", convs.SetContext(ctx, "c1", nil)},
		{"SaveTurn", convs.SaveTurn(ctx, ask.Turn{ID: "t1", ConversationID: "c1"})},
		{"Consume", errConsume},
		{"Pending", errPending},
		{"PutReceipt", approvals.PutReceipt(ctx, ask.Receipt{ApprovalID: "a1"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if askbi.ErrorCode(tt.err) != askbi.Internal {
				t.Fatalf("error = %v, want internal", tt.err)
			}
			if msg := askbi.ErrorMessage(tt.err); msg != "An internal error occurred." {
				t.Errorf("user message = %q, want the generic one", msg)
			}
		})
	}
}

// The child process of TestConsumeAcrossProcesses reads its task from
// these variables.
const (
	envConsumeURL       = "ASKBI_PGSTORE_CONSUME_CHILD_URL"
	envConsumeApprovals = "ASKBI_PGSTORE_CONSUME_CHILD_APPROVALS"
)

// consumeRacers is the number of goroutines racing in each process.
const consumeRacers = 16

// consumeApproval is the approval the processes race on: pair i is two
// approvals of one tool call.
func consumeApproval(pair int, second bool) ask.Approval {
	id := fmt.Sprintf("apr-%d-a", pair)
	if second {
		id = fmt.Sprintf("apr-%d-b", pair)
	}
	return ask.Approval{ID: id, UserID: "alice", TeamID: "acme", ConversationID: "c1", TurnID: "t1",
		ToolCallID: fmt.Sprintf("call-%d", pair), Tool: "create_dashboard", ArgsHash: "hash", Arguments: json.RawMessage(`{}`),
		CreatedAt: askT0, ExpiresAt: askT0.Add(5 * time.Minute)}
}

// raceConsume runs consumeRacers goroutines once start closes; each tries
// to consume both approvals of every pair (of ids, in pairs), and it
// returns how many succeeded, failing tb for an error other than
// approval_invalid or conflict.
func raceConsume(tb testing.TB, s *pgstore.ApprovalStore, ids []string, start <-chan struct{}) int {
	tb.Helper()
	errs := make([][]error, consumeRacers)
	var wg sync.WaitGroup
	for g := range consumeRacers {
		wg.Go(func() {
			<-start
			for i := range ids {
				id := ids[i^(g%2)] // half the racers try each pair's second approval first
				b := ask.Binding{UserID: "alice", TeamID: "acme", ConversationID: "c1", Tool: "create_dashboard", ArgsHash: "hash"}
				_, err := s.Consume(context.Background(), id, b, askT0.Add(time.Minute))
				errs[g] = append(errs[g], err)
			}
		})
	}
	wg.Wait()
	ok := 0
	for _, gerrs := range errs {
		for _, err := range gerrs {
			switch askbi.ErrorCode(err) {
			case "":
				ok++
			case askbi.ApprovalInvalid, askbi.Conflict:
			default:
				tb.Errorf("Consume = %v, want nil, approval_invalid or conflict", err)
			}
		}
	}
	return ok
}

// TestConsumeAcrossProcesses consumes the same approvals from this process
// and from a child process (this test binary run again, connecting to the
// same database) at the same time: of both approvals of each tool call,
// exactly one is consumed once.
func TestConsumeAcrossProcesses(t *testing.T) {
	const pairs = 8
	ctx := context.Background()
	url := pgtest.MustDatabase(t)
	db := MustPoolDB(t, url, consumeRacers)
	if err := pgstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	s := pgstore.NewApprovalStore(db)
	var ids []string
	for p := range pairs {
		for _, second := range []bool{false, true} {
			a := consumeApproval(p, second)
			if err := s.CreateApproval(ctx, a); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, a.ID)
		}
	}

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestConsumeHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envConsumeURL+"="+url, envConsumeApprovals+"="+strings.Join(ids, ","))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "ready" {
	}
	start := make(chan struct{})
	var parentOK int
	done := make(chan struct{})
	go func() {
		defer close(done)
		parentOK = raceConsume(t, s, ids, start)
	}()
	stdin.Close() // the child's go signal
	close(start)
	<-done
	childOK := -1
	for lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "consumed "); ok {
			if childOK, err = strconv.Atoi(n); err != nil {
				t.Fatal(err)
			}
		} else if lines.Text() != "PASS" {
			t.Logf("child: %s", lines.Text())
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if childOK < 0 {
		t.Fatal("the child reported no count")
	}
	t.Logf("parent consumed %d, child consumed %d", parentOK, childOK)
	if parentOK+childOK != pairs {
		t.Errorf("%d + %d Consumes succeeded, want %d: one per tool call", parentOK, childOK, pairs)
	}
	for p := range pairs {
		a, err := s.Approval(ctx, consumeApproval(p, false).ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Approval(ctx, consumeApproval(p, true).ID)
		if err != nil {
			t.Fatal(err)
		}
		if (a.State == ask.ApprovalConsumed) == (b.State == ask.ApprovalConsumed) {
			t.Errorf("pair %d: states %s and %s, want exactly one consumed", p, a.State, b.State)
		}
	}
}

// TestConsumeHelperProcess is the child process of
// TestConsumeAcrossProcesses; it is skipped when run on its own. It
// connects to the parent's database (no cluster of its own), says
// "ready", races once stdin closes, and prints "consumed N".
func TestConsumeHelperProcess(t *testing.T) {
	url := os.Getenv(envConsumeURL)
	if url == "" {
		t.Skip("the child process of TestConsumeAcrossProcesses")
	}
	s := pgstore.NewApprovalStore(MustPoolDB(t, url, consumeRacers))
	start := make(chan struct{})
	var ok int
	done := make(chan struct{})
	go func() {
		defer close(done)
		ok = raceConsume(t, s, strings.Split(os.Getenv(envConsumeApprovals), ","), start)
	}()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin) // EOF is the go signal
	close(start)
	<-done
	fmt.Printf("consumed %d\n", ok)
}

// MustPoolDB opens the database at url with a pool of n connections, all
// opened up front so that racing calls do not wait on connecting.
func MustPoolDB(tb testing.TB, url string, n int) *sqlx.DB {
	tb.Helper()
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	conns := make([]*sqlx.Conn, n)
	for i := range conns {
		if conns[i], err = db.Connx(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	return db
}
