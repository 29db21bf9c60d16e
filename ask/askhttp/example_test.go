package askhttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// Example mounts the chat API, creates a conversation and runs one turn
// answered as one JSON document (a client that sends Accept:
// text/event-stream gets the same events as Server-Sent Events).
func Example() {
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	exec := dataexec.NewExecutor(workspace.NewMemoryCatalog(), dataexec.SourceMap{}, nil)
	tools, _ := ask.NewRegistry(ask.ProductTools(exec)...)
	assistant := ask.New(mock.New(), gate, exec, ask.NewMemoryStores(), tools, nil)
	// The host's login; a real one reads its session cookie.
	session := func(*http.Request) (access.Principal, error) {
		return access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}, nil
	}
	srv := httptest.NewServer(askhttp.New(assistant, nil, session, nil))
	defer srv.Close()

	var created struct{ Conversation ask.Conversation }
	post := func(path, body string, out any) {
		res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		shown := path
		if id := created.Conversation.ID; id != "" {
			shown = strings.Replace(path, id, "{id}", 1)
		}
		fmt.Println("POST", shown, res.Status)
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			panic(err)
		}
	}
	post("/ai/conversations", "{}", &created)
	var turn struct{ Events []ask.Event }
	post("/ai/conversations/"+created.Conversation.ID+"/messages", `{"message": "hello"}`, &turn)
	for _, e := range turn.Events {
		switch e.Type {
		case ask.EventMessageDelta: // the answer's pieces, then the whole
		case ask.EventMessageCompleted:
			fmt.Printf("%s: %q\n", e.Type, e.Text)
		default:
			fmt.Println(e.Type, e.State)
		}
	}
	// Output:
	// POST /ai/conversations 201 Created
	// POST /ai/conversations/{id}/messages 200 OK
	// message.completed: "I can search your workspace, preview data and build charts. Try \"show signups by week\"."
	// request.completed completed
}
