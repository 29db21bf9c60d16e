package ask_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/workspace"
)

// TestMessagesKeepTheirItems: a user message records the items of the
// active context it was sent with, as safe references, and an opened
// conversation shows them with their pages: also after the items left
// the context, and as no longer available (no link) once one is deleted.
func TestMessagesKeepTheirItems(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	conv := e.MustConversation(t, alice)
	dash := ask.ContextRef{Type: access.TypeDashboard, ID: "d-revenue"}
	conn := ask.ContextRef{Type: access.TypeConnection, ID: "wh"}
	e.MustSend(t, alice, conv, "what is in these?", refs(chartRef("c-weekly"), dash, conn))
	e.MustSend(t, alice, conv, "and now without them", refs()) // the context is cleared
	e.MustSend(t, alice, conv, "hello", nil)                   // and stays empty

	weekly := ask.SentItem{EntityType: access.TypeChart, ID: "c-weekly", Name: "Weekly signups", Label: "Chart: Weekly signups"}
	revenue := ask.SentItem{EntityType: access.TypeDashboard, ID: "d-revenue", Name: "Revenue", Label: "Dashboard: Revenue"}
	warehouse := ask.SentItem{EntityType: access.TypeConnection, ID: "wh", Name: "Warehouse", Label: "Connection: Warehouse"}
	// What the store keeps: the references, no link.
	entries, err := e.convs.Entries(ctx, conv, 100)
	if err != nil {
		t.Fatal(err)
	}
	var stored [][]ask.SentItem
	for _, en := range entries {
		if en.Role == ask.RoleUser {
			stored = append(stored, en.Context)
		}
	}
	if diff := cmp.Diff([][]ask.SentItem{{weekly, revenue, warehouse}, nil, nil}, stored); diff != "" {
		t.Errorf("stored items mismatch (-want +got):\n%s", diff)
	}

	sentWith := func(v *ask.View) [][]ask.MessageItem {
		var out [][]ask.MessageItem
		for _, m := range v.Messages {
			if m.Role == ask.RoleUser {
				out = append(out, m.Context)
			}
		}
		return out
	}
	want := [][]ask.MessageItem{{
		{SentItem: weekly, URL: "/charts/c-weekly", Available: true},
		{SentItem: revenue, URL: "/dashboards/d-revenue", Available: true},
		{SentItem: warehouse, Available: true}, // a connection has no page
	}, nil, nil}
	v := e.MustOpen(t, alice, conv)
	if diff := cmp.Diff(want, sentWith(v)); diff != "" {
		t.Errorf("items after they left the context mismatch (-want +got):\n%s", diff)
	}
	if len(v.Context) != 0 {
		t.Errorf("active context = %+v, want empty", v.Context)
	}

	// Deleted: named as it was, without a link.
	if err := e.cat.DeleteDashboard(ctx, "d-revenue"); err != nil {
		t.Fatal(err)
	}
	want[0][1] = ask.MessageItem{SentItem: revenue}
	if diff := cmp.Diff(want, sentWith(e.MustOpen(t, alice, conv))); diff != "" {
		t.Errorf("items after a deletion mismatch (-want +got):\n%s", diff)
	}
}

// TestMessageRecordsRevalidatedItems: a message records the context as
// the turn used it, after revalidation: an item deleted since it was
// selected is not among them; the items the context search and the
// active context give carry the same links.
func TestMessageRecordsRevalidatedItems(t *testing.T) {
	e := newEnv(t, nil)
	conv := e.MustConversation(t, alice)
	events := e.MustSend(t, alice, conv, "hello", refs(chartRef("c-weekly"), ask.ContextRef{Type: access.TypeDataset, ID: "ds-mrr"}))
	up := find(events, ask.EventContextUpdated)
	if up == nil {
		t.Fatal("no context.updated")
	}
	var urls []string
	for _, it := range up.Context {
		urls = append(urls, it.URL)
	}
	if diff := cmp.Diff([]string{"/charts/c-weekly", "/datasets/ds-mrr"}, urls); diff != "" {
		t.Errorf("context item URLs mismatch (-want +got):\n%s", diff)
	}
	e.cat.DeleteChart("c-weekly")
	e.MustSend(t, alice, conv, "again", nil)
	v := e.MustOpen(t, alice, conv)
	var got [][]string
	for _, m := range v.Messages {
		if m.Role != ask.RoleUser {
			continue
		}
		var ids []string
		for _, it := range m.Context {
			ids = append(ids, it.ID)
		}
		got = append(got, ids)
	}
	if diff := cmp.Diff([][]string{{"c-weekly", "ds-mrr"}, {"ds-mrr"}}, got); diff != "" {
		t.Errorf("sent items mismatch (-want +got):\n%s", diff)
	}
	groups, err := e.a.SearchContext(context.Background(), alice, ask.ContextQuery{TeamID: "acme", Text: "MRR"})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, g := range groups {
		for _, it := range g.Items {
			found[it.ID] = it.URL
		}
	}
	for id, want := range map[string]string{"ds-mrr": "/datasets/ds-mrr", "c-mrr": "/charts/c-mrr"} {
		if found[id] != want {
			t.Errorf("search result %s URL = %q, want %q", id, found[id], want)
		}
	}
}

// TestManySentItemsOpen: a conversation whose messages were sent with
// more items than one catalog lookup takes (50) opens, each available.
func TestManySentItemsOpen(t *testing.T) {
	e := newEnv(t, nil)
	conv := e.MustConversation(t, alice)
	for i := range 6 {
		var sel []ask.ContextRef
		for j := range ask.MaxContextItems {
			id := fmt.Sprintf("d-%d-%d", i, j)
			e.cat.PutDashboard(workspace.Dashboard{ID: id, TeamID: "acme", ProjectID: "growth", Name: "Board " + id})
			sel = append(sel, ask.ContextRef{Type: access.TypeDashboard, ID: id})
		}
		e.MustSend(t, alice, conv, "hello", &sel)
	}
	n := 0
	for _, m := range e.MustOpen(t, alice, conv).Messages {
		for _, it := range m.Context {
			if !it.Available || it.URL != "/dashboards/"+it.ID {
				t.Errorf("item %+v: want available with its page", it)
			}
			n++
		}
	}
	if n != 60 {
		t.Errorf("%d items, want 60", n)
	}
}
