package connections

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKeeperBoundsMemory: however long the list, the keeper holds fewer
// than twice its bound after each page, keeps approved tools and the best
// matches of the focus, in the server's order, and counts the rest.
func TestKeeperBoundsMemory(t *testing.T) {
	o := &Options{MaxSchemaBytes: 16 << 10, MaxSchemaDepth: 10}
	schema := map[string]any{"type": "object"}
	k := newKeeper(100, "weekly signups", map[string]bool{"t_00150": true, "t_19990": true})
	for p := range 20 {
		page := make([]*mcp.Tool, 1000)
		for i := range page {
			n := p*1000 + i
			name := fmt.Sprintf("t_%05d", n)
			if n == 12345 {
				name = "weekly_signups"
			}
			page[i] = &mcp.Tool{Name: name, InputSchema: schema}
		}
		k.add(page, o)
		if len(k.kept) >= 2*k.max {
			t.Fatalf("after page %d the keeper holds %d tools; want fewer than %d", p, len(k.kept), 2*k.max)
		}
	}
	l := k.result(false)
	var names []string
	for _, tl := range l.found {
		names = append(names, tl.Name)
	}
	if len(names) != 100 || l.leftOut != 19900 {
		t.Fatalf("kept %d, left out %d; want 100 and 19,900", len(names), l.leftOut)
	}
	want := []string{names[0], "t_00150", "weekly_signups", "t_19990"}
	got := []string{names[0]}
	for _, n := range names {
		if n == "t_00150" || n == "weekly_signups" || n == "t_19990" {
			got = append(got, n)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept, in order (-want +got):\n%s", diff)
	}
}
