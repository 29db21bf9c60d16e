package access_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// TestMemoryAuditKeepsLast checks that the sink keeps the last max
// entries, oldest first, at every fill level.
func TestMemoryAuditKeepsLast(t *testing.T) {
	const max = 3
	a := access.NewMemoryAudit(max)
	var all []string
	for i := range 8 {
		action := "a" + strconv.Itoa(i)
		if err := a.Record(context.Background(), access.AuditEntry{Action: action}); err != nil {
			t.Fatal(err)
		}
		all = append(all, action)
		want := all[len(all)-min(len(all), max):]
		var got []string
		for _, e := range a.Entries() {
			got = append(got, e.Action)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("after %d records: Entries mismatch (-want +got):\n%s", i+1, diff)
		}
	}
}

// BenchmarkMemoryAuditRecord records into a full 10,000-entry sink, as the
// reference server's is after a while.
func BenchmarkMemoryAuditRecord(b *testing.B) {
	a := access.NewMemoryAudit(10000)
	e := access.AuditEntry{Action: "mcp.run_dataset", Details: map[string]string{"tool": "run_dataset"}}
	for range 10000 {
		_ = a.Record(context.Background(), e)
	}
	for b.Loop() {
		_ = a.Record(context.Background(), e)
	}
}

// failingSink refuses every entry.
type failingSink struct{ n int }

func (f *failingSink) Record(context.Context, access.AuditEntry) error {
	f.n++
	return askbi.Errorf(askbi.Unavailable, "down")
}

// TestTeeAudit: every sink gets each entry, also after one fails, whose
// error is returned; nil sinks are left out.
func TestTeeAudit(t *testing.T) {
	a, b := access.NewMemoryAudit(0), access.NewMemoryAudit(0)
	down := &failingSink{}
	tee := access.TeeAudit(a, nil, down, b)
	err := tee.Record(context.Background(), access.AuditEntry{Action: "x"})
	if askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("Record = %v, want the failing sink's unavailable", err)
	}
	if len(a.Entries()) != 1 || len(b.Entries()) != 1 || down.n != 1 {
		t.Errorf("entries: %d, %d, %d tries; want one each", len(a.Entries()), len(b.Entries()), down.n)
	}
}
