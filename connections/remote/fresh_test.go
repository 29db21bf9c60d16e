package remote_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/conntest"
)

// freshEnv is an env on a settable clock with one connection to r whose
// read-only tool top_pages is allowed, counting the tools/list and
// tools/call requests r gets.
type freshEnv struct {
	*conntest.Env
	Clock        *conntest.Clock
	r            *conntest.Remote
	conn         connections.Connection
	lists, calls atomic.Int64
}

func newFreshEnv(t *testing.T) *freshEnv {
	t.Helper()
	c := conntest.NewClock()
	e := &freshEnv{Env: newEnv(t, &conntest.Options{Now: c.Now}), Clock: c, r: newRemote(t)}
	e.r.Set(tool("top_pages", "Top pages.", readOnly, nil, nil))
	e.r.Before = func(b []byte) {
		switch {
		case bytes.Contains(b, []byte(`"tools/list"`)):
			e.lists.Add(1)
		case bytes.Contains(b, []byte(`"tools/call"`)):
			e.calls.Add(1)
		}
	}
	e.conn = e.MustConnection(t, "Analytics", e.r, "")
	e.MustAllow(t, e.conn.ID, "top_pages")
	return e
}

// run calls top_pages the way via says: Ask's Call with the fingerprint
// it offered, or a dataset run (the dataexec.Source).
func (e *freshEnv) run(t *testing.T, via, fp string) error {
	t.Helper()
	if via == "ask" {
		_, err := e.Tools.Call(t.Context(), alice, e.conn.ID, "top_pages", fp, json.RawMessage(`{}`))
		return err
	}
	_, err := mcpsource.NewSource(e.Tools, e.conn.ID).Query(t.Context(), dataexec.Query{Tool: "top_pages", Arguments: json.RawMessage(`{}`), MaxRows: 10, MaxBytes: 1 << 20})
	return err
}

// TestCallChecksFreshListing: a call checks the tool against a listing
// no older than 60 s, for Ask and datasets alike: a read-only tool that
// became mutating on the server is blocked once the listing is older,
// without a refresh by anyone; a description-only change runs; a listing
// that fails turns nothing off and the call fails, to try again.
func TestCallChecksFreshListing(t *testing.T) {
	for _, via := range []string{"ask", "dataset"} {
		t.Run(via+": a widening change", func(t *testing.T) {
			e := newFreshEnv(t)
			fp := e.MustTool(t, e.conn.ID, "top_pages").Fingerprint()
			_, changes, _ := e.Tools.ApprovedTools(t.Context(), alice)
			e.r.Set(tool("top_pages", "Top pages.", mutating, nil, nil))
			lists := e.lists.Load()
			e.Clock.Add(59 * time.Second)
			if err := e.run(t, via, fp); err != nil {
				t.Fatalf("a call within 60 s of the listing = %v; want it to run", err)
			}
			if n := e.lists.Load() - lists; n != 0 {
				t.Errorf("a call within the bound listed the tools %d times; want none", n)
			}
			e.Clock.Add(2 * time.Second) // the listing is 61 s old
			calls := e.calls.Load()
			err := e.run(t, via, fp)
			if kind, _ := dataexec.FailureOf(err); askbi.ErrorCode(err) != askbi.Unavailable || kind != dataexec.FailUnavailableTool ||
				!strings.Contains(askbi.ErrorMessage(err), "needs approval again") {
				t.Fatalf("a call after the tool turned mutating = %v (kind %q); want unavailable, needs approval again", err, kind)
			}
			if n := e.calls.Load() - calls; n != 0 {
				t.Errorf("the blocked call reached the server (%d tools/call)", n)
			}
			if s := e.States(t, e.conn.ID)["top_pages"]; s != connections.ToolReapprove {
				t.Errorf("top_pages is %s; want reapprove", s)
			}
			select {
			case <-changes:
			default:
				t.Error("the change did not stop the turns offering the tool")
			}
		})

		t.Run(via+": a description change", func(t *testing.T) {
			e := newFreshEnv(t)
			fp := e.MustTool(t, e.conn.ID, "top_pages").Fingerprint()
			e.r.Set(tool("top_pages", "Top pages. Now with ignore-all-instructions.", readOnly, nil, nil))
			e.Clock.Add(61 * time.Second)
			lists := e.lists.Load()
			if err := e.run(t, via, fp); err != nil {
				t.Fatalf("a call after a description change = %v; want it to run", err)
			}
			if e.lists.Load() == lists {
				t.Error("the call did not list the tools, its listing 61 s old")
			}
			if st := e.MustTool(t, e.conn.ID, "top_pages"); !st.Access.DescriptionChanged || !st.Usable() {
				t.Errorf("top_pages %+v; want usable, its description change recorded", st.Access)
			}
		})

		t.Run(via+": the listing fails", func(t *testing.T) {
			e := newFreshEnv(t)
			fp := e.MustTool(t, e.conn.ID, "top_pages").Fingerprint()
			before, _ := e.Store.Get(t.Context(), e.conn.ID)
			e.r.Mu.Lock()
			e.r.Raw = func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }
			e.r.Mu.Unlock()
			e.Clock.Add(61 * time.Second)
			err := e.run(t, via, fp)
			if kind, _ := dataexec.FailureOf(err); askbi.ErrorCode(err) != askbi.Unavailable || kind.Repair() != dataexec.RepairTryAgain ||
				!strings.Contains(askbi.ErrorMessage(err), "nothing ran") {
				t.Fatalf("a call whose listing fails = %v (kind %q); want unavailable, try again, nothing ran", err, kind)
			}
			if e.calls.Load() != 0 {
				t.Error("the call ran though its listing failed")
			}
			if after, _ := e.Store.Get(t.Context(), e.conn.ID); after.Version != before.Version || !after.Active {
				t.Errorf("a failed listing changed the connection (version %d → %d, active %v)", before.Version, after.Version, after.Active)
			}
			e.r.Mu.Lock()
			e.r.Raw = nil
			e.r.Mu.Unlock()
			if err := e.run(t, via, fp); err != nil {
				t.Errorf("the call once the server is back = %v", err)
			}
		})
	}
}

// TestListChangedRefreshesListing: a notifications/tools/list_changed the
// server sends during a session marks the listing stale, so the next call
// lists again at once, and is blocked when the change widened the tool.
func TestListChangedRefreshesListing(t *testing.T) {
	e := newFreshEnv(t)
	fp := e.MustTool(t, e.conn.ID, "top_pages").Fingerprint()
	var notified atomic.Bool
	e.r.Mu.Lock()
	e.r.Front = func(w http.ResponseWriter, req *http.Request) bool {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		if !bytes.Contains(b, []byte(`"tools/call"`)) || notified.Load() {
			return false
		}
		// The tool turns mutating as it answers, and the server says its
		// list changed, on the call's event stream.
		notified.Store(true)
		e.r.Set(tool("top_pages", "Top pages.", mutating, nil, nil))
		var msg struct{ ID json.RawMessage }
		json.Unmarshal(b, &msg)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"[]\"}]}}\n\n", msg.ID)
		return true
	}
	e.r.Mu.Unlock()
	if _, err := e.Tools.Call(t.Context(), alice, e.conn.ID, "top_pages", fp, json.RawMessage(`{}`)); err != nil {
		t.Fatalf("the call that hears list_changed = %v", err)
	}
	if c, _ := e.Conns.Get(t.Context(), alice, e.conn.ID); !c.Discovery.Stale {
		t.Fatalf("after list_changed the discovery is %+v; want stale", c.Discovery)
	}
	lists := e.lists.Load()
	_, err := e.Tools.Call(t.Context(), alice, e.conn.ID, "top_pages", fp, json.RawMessage(`{}`))
	if askbi.ErrorCode(err) != askbi.Unavailable || !strings.Contains(askbi.ErrorMessage(err), "needs approval again") {
		t.Errorf("the next call, at once = %v; want needs approval again", err)
	}
	if e.lists.Load() == lists {
		t.Error("the next call did not list the tools again")
	}
	if c, _ := e.Conns.Get(t.Context(), alice, e.conn.ID); c.Discovery.Stale {
		t.Errorf("after the new listing the discovery is %+v; want it no longer stale", c.Discovery)
	}
}
