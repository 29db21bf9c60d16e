package pgstore_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/memory/memorytest"
	"github.com/askbi/askbi/pgstore"
)

// unlimited is a rate limiter the tests never run out of.
var unlimited = access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1 << 30, Rate: 1 << 30})

func TestMemoryStore(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store { return pgstore.NewMemoryStore(MustStore(t)) })
}

var (
	memAlice = access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	memBob   = access.Principal{UserID: "bob", TeamID: "acme", Auth: access.AuthSession}
)

// MustMemoryKeyring returns a keyring of deterministic keys (SHA-256 of each
// ID), sealing with current, so two processes share it.
func MustMemoryKeyring(tb testing.TB, current string, ids ...string) *memory.StaticKeyring {
	tb.Helper()
	keys := map[string][]byte{}
	for _, id := range append(ids, current) {
		k := sha256.Sum256([]byte(id))
		keys[id] = k[:]
	}
	r, err := memory.NewStaticKeyring(current, keys)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// MustMemoryService returns a memory service on db for alice and bob of
// acme, sealing with keys.
func MustMemoryService(tb testing.TB, db *sqlx.DB, keys memory.Keyring) *memory.Service {
	tb.Helper()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleViewer, access.ProjectSet())
	dir.SetMember("acme", "bob", access.RoleViewer, access.ProjectSet())
	return memory.NewService(pgstore.NewMemoryStore(db), keys, access.NewGate(access.NewChecker(dir, nil), unlimited), nil)
}

// The child process of TestMemoryLimitsAcrossProcesses reads its task from
// these variables.
const (
	envMemoryChildURL   = "ASKBI_PGSTORE_MEMORY_CHILD_URL"
	envMemoryChildChars = "ASKBI_PGSTORE_MEMORY_CHILD_CHARS"
	envMemoryChildTries = "ASKBI_PGSTORE_MEMORY_CHILD_TRIES"
)

// TestMemoryLimitsAcrossProcesses adds memories for one user from this
// process and from a child process (this test binary, run again) at the
// same time, on one database. The advisory lock must keep the user within
// the limits, and exactly the allowed number of adds must succeed.
func TestMemoryLimitsAcrossProcesses(t *testing.T) {
	if url := os.Getenv(envMemoryChildURL); url != "" {
		runMemoryChild(t, url)
		return
	}
	for _, tc := range []struct {
		name         string
		chars, tries int // per process
		want         int
	}{
		{"TotalCap", 200, 25, 40}, // 8,000 / 200
		{"CountCap", 10, 30, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.MustDatabase(t)
			db := MustMemoryDB(t, url)
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMemoryLimitsAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), envMemoryChildURL+"="+url,
				envMemoryChildChars+"="+strconv.Itoa(tc.chars), envMemoryChildTries+"="+strconv.Itoa(tc.tries))
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
			if !scanToLine(lines, "ready") {
				t.Fatalf("child did not get ready: %v", cmd.Wait())
			}
			svc := MustMemoryService(t, db, MustMemoryKeyring(t, "k1"))
			start := make(chan struct{})
			var wg sync.WaitGroup
			results := make([]error, tc.tries)
			for i := range tc.tries {
				wg.Go(func() {
					<-start
					_, results[i] = svc.Add(context.Background(), memAlice, memoryText("parent", i, tc.chars))
				})
			}
			stdin.Close() // the child's go signal
			close(start)
			wg.Wait()
			parentOK := countMemoryAdds(t, results)
			var childOK int
			for lines.Scan() {
				n, ok := strings.CutPrefix(lines.Text(), "added ")
				if !ok {
					if lines.Text() != "PASS" {
						t.Logf("child: %s", lines.Text())
					}
					continue
				}
				if childOK, err = strconv.Atoi(n); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v", err)
			}
			t.Logf("parent added %d, child added %d", parentOK, childOK)
			if parentOK+childOK != tc.want {
				t.Errorf("%d + %d adds succeeded, want %d in all", parentOK, childOK, tc.want)
			}
			items, err := svc.List(context.Background(), memAlice)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, it := range items {
				total += len([]rune(it.Text))
			}
			if len(items) != tc.want || total > memory.DefaultMaxTotalChars {
				t.Errorf("alice has %d memories of %d chars; want %d, at most %d chars", len(items), total, tc.want, memory.DefaultMaxTotalChars)
			}
		})
	}
}

// runMemoryChild is the child process: it connects, says "ready", waits
// for stdin to close, adds concurrently, and prints "added N".
func runMemoryChild(t *testing.T, url string) {
	chars, _ := strconv.Atoi(os.Getenv(envMemoryChildChars))
	tries, _ := strconv.Atoi(os.Getenv(envMemoryChildTries))
	db := MustMemoryDB(t, url)
	svc := MustMemoryService(t, db, MustMemoryKeyring(t, "k1"))
	fmt.Println("ready")
	start := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]error, tries)
	for i := range tries {
		wg.Go(func() {
			<-start
			_, results[i] = svc.Add(context.Background(), memAlice, memoryText("child", i, chars))
		})
	}
	bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent says go
	close(start)
	wg.Wait()
	fmt.Printf("added %d\n", countMemoryAdds(t, results))
}

// MustMemoryDB opens the migrated database at url with a pool of 10, warmed up
// so that the adds do not wait on connecting.
func MustMemoryDB(tb testing.TB, url string) *sqlx.DB {
	tb.Helper()
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(10)
	db.SetMaxIdleConns(10)
	if err := pgstore.Migrate(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
	var conns []*sqlx.Conn
	for range 10 {
		c, err := db.Connx(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	return db
}

func memoryText(who string, i, chars int) string {
	prefix := fmt.Sprintf("%s %d ", who, i)
	return prefix + strings.Repeat("m", chars-len(prefix))
}

func countMemoryAdds(tb testing.TB, errs []error) int {
	tb.Helper()
	ok := 0
	for _, err := range errs {
		switch askbi.ErrorCode(err) {
		case "":
			ok++
		case askbi.TooLarge:
		default:
			tb.Errorf("Add = %v, want nil or too_large", err)
		}
	}
	return ok
}

func scanToLine(s *bufio.Scanner, line string) bool {
	for s.Scan() {
		if s.Text() == line {
			return true
		}
	}
	return false
}

// TestMemoryAtRest reads the raw table: no column of any row holds the
// text or any 8-byte piece of it.
func TestMemoryAtRest(t *testing.T) {
	ctx := context.Background()
	db := MustStore(t)
	svc := MustMemoryService(t, db, MustMemoryKeyring(t, "k1"))
	texts := []string{
		"The board meets on the first Thursday of every quarter.",
		"Umsätze immer in Euro (€) ohne Mehrwertsteuer anzeigen.",
		"売上は税抜きで表示してください。",
	}
	for _, text := range texts {
		if _, err := svc.Add(ctx, memAlice, text); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.QueryxContext(ctx, `SELECT * FROM memories`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		row := map[string]any{}
		if err := rows.MapScan(row); err != nil {
			t.Fatal(err)
		}
		for col, v := range row {
			var s string
			switch v := v.(type) {
			case []byte:
				s = string(v)
			case string:
				s = v
			}
			for _, text := range texts {
				for i := 0; i+8 <= len(text); i++ {
					if strings.Contains(s, text[i:i+8]) {
						t.Errorf("column %s holds %q of a memory's text", col, text[i:i+8])
						break
					}
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(texts) {
		t.Fatalf("got %d rows, want %d", n, len(texts))
	}
}

// TestMemoryRowMoved changes raw rows behind the service's back: a row
// moved or copied to another user, or to another ID, no longer opens.
func TestMemoryRowMoved(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		query  string
		reader access.Principal
	}{
		{"MovedToBob", `UPDATE memories SET user_id = 'bob' WHERE user_id = 'alice'`, memBob},
		{"CopiedOverBobs", `UPDATE memories AS b SET key_id = a.key_id, nonce = a.nonce, ciphertext = a.ciphertext, chars = a.chars
			FROM memories AS a WHERE a.user_id = 'alice' AND b.user_id = 'bob'`, memBob},
		{"MovedToOtherID", `UPDATE memories SET id = id || 'x' WHERE user_id = 'alice'`, memAlice},
		{"LengthChanged", `UPDATE memories SET chars = chars + 1 WHERE user_id = 'alice'`, memAlice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustStore(t)
			svc := MustMemoryService(t, db, MustMemoryKeyring(t, "k1"))
			if _, err := svc.Add(ctx, memAlice, "only alice may read this"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Add(ctx, memBob, "bob's own note, same length."); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, tc.query); err != nil {
				t.Fatal(err)
			}
			items, err := svc.List(ctx, tc.reader)
			if askbi.ErrorCode(err) != askbi.Internal || items != nil {
				t.Errorf("List = %v, %v; want internal", items, err)
			}
			if msg := askbi.ErrorMessage(err); strings.Contains(msg, "alice") || strings.Contains(msg, "k1") {
				t.Errorf("message %q is not safe", msg)
			}
		})
	}
}

func TestMemoryKeyRotation(t *testing.T) {
	ctx := context.Background()
	db := MustStore(t)
	old := MustMemoryService(t, db, MustMemoryKeyring(t, "k1"))
	a, err := old.Add(ctx, memAlice, "sealed under k1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Add(ctx, memAlice, "also under k1"); err != nil {
		t.Fatal(err)
	}
	rotated := MustMemoryService(t, db, MustMemoryKeyring(t, "k2", "k1"))
	items, err := rotated.List(ctx, memAlice)
	if err != nil || len(items) != 2 {
		t.Fatalf("List after rotation = %v, %v", items, err)
	}
	for _, it := range items {
		if it.ID == a.ID && it.Text != "sealed under k1" {
			t.Errorf("after rotation, %s reads %q", it.ID, it.Text)
		}
	}
	if _, err := rotated.Edit(ctx, memAlice, a.ID, "resealed under k2"); err != nil {
		t.Fatal(err)
	}
	var keyIDs []string
	if err := db.SelectContext(ctx, &keyIDs, `SELECT key_id FROM memories ORDER BY id = $1 DESC`, a.ID); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keyIDs, ",") != "k2,k1" {
		t.Errorf("key IDs (edited row first) = %v, want [k2 k1]", keyIDs)
	}
	if _, err := MustMemoryService(t, db, MustMemoryKeyring(t, "k2")).List(ctx, memAlice); askbi.ErrorCode(err) != askbi.Internal {
		t.Errorf("List without k1 = %v, want internal", err)
	}
}
