package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/dataexec"
)

// ConnectionSetupType is the Type of a [ConnectionSetup] result.
const ConnectionSetupType = connresolve.SetupType

// ConnectionSetup is the typed chat result of list_connections, the
// connection setup card a client renders (Output.Result, and
// ToolRun.Result in the work summary): connresolve's Setup card.
// Opening the conversation again resolves it afresh, so a card whose
// connection was since set up shows it connected, and marks every card
// but the latest Inert. [ContinueRequest] and [AddedConnection] answer the
// latest card (Send).
type ConnectionSetup = connresolve.Setup

// connectionsInput is list_connections' input.
type connectionsInput struct {
	Provider   string                 `json:"provider,omitempty"`
	Capability connresolve.Capability `json:"capability"`
}

// ListConnections is the list_connections tool over the host's
// connection resolver: the model names the data capability a question
// needs (and the provider, when the user named one) and gets the shortest
// safe path to it: a connection the user can use, or the setup that gets
// one (native source, verified MCP provider with OAuth, manual MCP
// setup), admin_required for a user who may not configure connections,
// or unsupported. It is read-only and grants nothing; setting a
// connection up is the user's action on the card, never the model's.
func ListConnections(r *connresolve.Resolver) Tool {
	caps := make([]string, len(connresolve.Capabilities))
	for i, c := range connresolve.Capabilities {
		caps[i] = fmt.Sprintf("%q", c)
	}
	schema := `{"type":"object","properties":{` +
		`"provider":{"type":"string","maxLength":100,"description":"The product the user named (\"PostHog\"), if any."},` +
		`"capability":{"type":"string","enum":[` + strings.Join(caps, ",") + `],"description":"The kind of data the question needs."}},` +
		`"required":["capability"],"additionalProperties":false}`
	resolve := func(ctx context.Context, p access.Principal, in connectionsInput) (ConnectionSetup, error) {
		return r.Setup(ctx, p, in.Provider, in.Capability)
	}
	return Tool{
		Name: "list_connections",
		Description: "Check whether the team has a connection for the data a question needs, and if not, the shortest way to set one up. " +
			"Call it before answering from a source that may not be connected.",
		InputSchema: json.RawMessage(schema), Class: dataexec.ClassReadOnly, Label: "Checked connections", Filter: ShowAll,
		Run: func(ctx context.Context, call Call) (Output, error) {
			var in connectionsInput
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return Output{}, err
			}
			setup, err := resolve(ctx, call.Principal, in)
			if err != nil {
				return Output{}, err
			}
			view := make([]map[string]string, len(setup.Options))
			for i, o := range setup.Options {
				view[i] = map[string]string{"state": string(o.State), "provider": o.Provider, "message": o.Message}
				if o.ConnectionName != "" {
					view[i]["connection"] = o.ConnectionName
				}
			}
			summary := "Setup needed"
			if !setup.NeedsSetup {
				summary = count(len(setup.Options), "connection") + " ready"
			}
			return Output{Summary: summary, NeedsSetup: setup.NeedsSetup, Result: setup,
				Data: map[string]any{"needs_setup": setup.NeedsSetup, "missing": setup.Missing, "options": view}}, nil
		},
		Refresh: func(ctx context.Context, p access.Principal, result json.RawMessage) (json.RawMessage, error) {
			var old ConnectionSetup
			if json.Unmarshal(result, &old) != nil || old.Type != ConnectionSetupType {
				return result, nil
			}
			setup, err := resolve(ctx, p, connectionsInput{Provider: old.Provider, Capability: old.Capability})
			if err != nil {
				return nil, err
			}
			setup.Inert = old.Inert
			return json.Marshal(setup)
		},
	}
}
