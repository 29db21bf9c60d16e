package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// Call is one tool call as a tool's Run receives it. Arguments are
// validated against the tool's input schema, and references to selected
// context items ("@c1") are already replaced with the items' IDs.
type Call struct {
	Principal      access.Principal
	ConversationID string
	Arguments      json.RawMessage
	// Message is the user's message of the turn (redacted), or for a
	// continued request the question it continues, or "" when the call
	// runs on an approval: what a scoped dataset's request is checked
	// against (dataexec.Uncovered), and what a remote answer is titled
	// after (RemoteResult.Title).
	Message string
}

// Output is what a tool returns.
type Output struct {
	// Summary is one short line for the work summary and the model, such
	// as "12 rows".
	Summary string
	// Data is the tool's full output. It is saved (redacted) and reaches
	// the model only through the tool's Filter.
	Data any
	// Result is the safe result the client renders, such as chart
	// references. It holds no rows of the product's data (the page loads
	// those through the chart routes); a remote tool's answer
	// (RemoteResult) is the one exception: the user's own data, drawn in
	// the chat.
	Result any
	// NeedsSetup says the data the question needs is not connected yet
	// (list_connections found no usable connection): for the rest of the
	// turn a call of a chart tool (Tool.Chart) is refused, not run, so
	// the model explains the missing access instead of making a chart of
	// something else.
	NeedsSetup bool
}

// Tool is one tool the model may call, defined once: its name, input
// schema, classification, what of its output the model may see, and its
// work-summary label.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	Class       dataexec.Class
	// Label names the call in the work summary, e.g. "Previewed data".
	Label string
	// Title is the action in words, as an approval asks for it, e.g.
	// "Delete dashboard". Default Label.
	Title string
	// Precheck, when set, runs before a gated call is proposed for
	// approval, for the call's live principal: an error (Forbidden,
	// ScopeRequired, NotFound) answers the model with its reason instead
	// of an approval, for it to tell the user; nothing is proposed or
	// run, and the call is no step of the work summary. It only spares
	// the user an approval that would fail: the call's own checks run
	// again when it is approved.
	Precheck func(ctx context.Context, call Call) error
	// Filter returns the part of data (the JSON of Output.Data) the model
	// may see at a sharing level. It runs live and again on every history
	// replay. Default ShapeOnly, the strictest: a tool whose output may
	// reach the model declares ShowAll (no rows in it), TableFilter or
	// its own.
	Filter func(data json.RawMessage, level Sharing) json.RawMessage
	// ApproveRight, when set, is the team right a user needs to approve
	// a call of this gated tool. A user without it is told with the
	// approval (ToolEvent.CanApprove false: the client says "Ask an
	// admin"), and Approve refuses them Forbidden, runs nothing and
	// leaves the approval pending; they may still reject it. RemoteTools
	// sets it from the tool's class; the product's own tools leave it
	// empty, as their actions check their own rights (Precheck, Run).
	ApproveRight access.Right
	// Target is what an approval of a call binds besides the tool's name
	// and arguments: "" for the product's own tools; for a remote MCP
	// tool, its connection, remote name and definition fingerprint (see
	// RemoteTools), so an approval cannot run another connection's tool
	// of the same name or a tool whose definition widened since.
	Target string
	// Chart marks a tool that makes or changes charts: refused for the
	// rest of a turn once a tool said setup is needed (Output.NeedsSetup).
	// It stays in the tool list, which is the same for every request.
	Chart bool
	// Preview marks a tool that creates chart previews (its Output.Data
	// is an object with the "chart" reference): an identical request in
	// the same conversation returns the preview made before, and the
	// conversation's count of distinct previews decides when Ask offers,
	// once, to place them all (Options.OfferPlacementAfter).
	Preview bool
	// OwnCharts marks a tool whose chart_ids must all be chart results of
	// the conversation, as the direct placement requires of its chart:
	// otherwise it is not proposed, and not run.
	OwnCharts bool
	// Refresh, when set, re-reads a completed call's saved Result for live
	// principal p when its conversation is opened (a connection setup
	// card then shows the connection set up since). On an error the
	// saved Result is shown as it was.
	Refresh func(ctx context.Context, p access.Principal, result json.RawMessage) (json.RawMessage, error)
	Run     func(ctx context.Context, call Call) (Output, error)
}

// mayApprove returns nil when live principal p may approve a call of
// tool (Tool.ApproveRight), and Forbidden saying why otherwise.
func mayApprove(p access.Principal, tool Tool) error {
	if tool.ApproveRight == "" {
		return nil
	}
	if err := access.Allow(p, tool.ApproveRight, access.Team(p.TeamID)); err != nil {
		return &askbi.Error{Code: askbi.Forbidden, Message: "Your role cannot approve this call (" + askbi.ErrorMessage(err) + "). Ask an admin.", Err: err}
	}
	return nil
}

// Remote tool names follow MCP's rule for tool names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Registry is the explicit allowlist of tools the model may see.
type Registry struct {
	tools   []Tool
	schemas map[string]*jsonschema.Resolved
}

// NewRegistry checks and registers tools, in order. Names must be unique
// and match ^[a-zA-Z0-9_-]{1,64}$; each tool needs an object input schema,
// a class, a label and Run.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{schemas: map[string]*jsonschema.Resolved{}}
	for _, t := range tools {
		if err := r.add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// add checks and registers one tool.
func (r *Registry) add(t Tool) error {
	if !toolName.MatchString(t.Name) {
		return fmt.Errorf("ask: tool name %q must match %s", t.Name, toolName)
	}
	if _, dup := r.schemas[t.Name]; dup {
		return fmt.Errorf("ask: tool %q registered twice", t.Name)
	}
	if t.Run == nil || t.Label == "" || !slices.Contains(dataexec.Classes, t.Class) {
		return fmt.Errorf("ask: tool %q needs Run, Label and a Class", t.Name)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &s); err != nil || s.Type != "object" {
		return fmt.Errorf("ask: tool %q: input schema must be a JSON object schema", t.Name)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("ask: tool %q: %v", t.Name, err)
	}
	if t.Filter == nil {
		t.Filter = ShapeOnly
	}
	if t.Title == "" {
		t.Title = t.Label
	}
	r.schemas[t.Name] = res
	r.tools = append(r.tools, t)
	return nil
}

// Tool returns the registered tool called name.
func (r *Registry) Tool(name string) (Tool, bool) {
	i := slices.IndexFunc(r.tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return Tool{}, false
	}
	return r.tools[i], true
}

// lookup returns the tool called name, or a stand-in that runs nothing
// when it is no longer registered, and whether it is registered.
func (r *Registry) lookup(name string) (Tool, bool) {
	if t, ok := r.Tool(name); ok {
		return t, true
	}
	return Tool{Name: name, Label: "Unknown tool", Title: "Unknown tool", Class: dataexec.ClassUnknown, Filter: withheld,
		Run: func(context.Context, Call) (Output, error) {
			return Output{}, errNoLongerAvailable()
		}}, false
}

// withheld is the filter of a tool no longer registered: its saved output
// reaches the model no more.
func withheld(json.RawMessage, Sharing) json.RawMessage {
	return json.RawMessage(`{"withheld":"tool no longer available"}`)
}

// specs lists the tools for a model request, in registration order, the
// same for every request of a kind. Headless runs leave gated tools out:
// nobody could approve them.
func (r *Registry) specs(headless bool) []ToolSpec {
	var out []ToolSpec
	for _, t := range r.tools {
		if headless && t.Class.Gated() {
			continue
		}
		out = append(out, ToolSpec{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return out
}

// validate checks arguments against the tool's input schema.
func (r *Registry) validate(name string, args json.RawMessage) error {
	var plain map[string]any
	if err := json.Unmarshal(args, &plain); err != nil || plain == nil {
		return askbi.Errorf(askbi.InvalidArgument, "arguments must be a JSON object")
	}
	if err := r.schemas[name].Validate(plain); err != nil {
		// The words the MCP server answers with for the same arguments;
		// the validator's own text ("minimum: 0/1 is less than
		// 1.000000") reads as a bug to a person.
		t, _ := r.Tool(name)
		if msg := dataexec.ExplainArguments(t.InputSchema, args); msg != "" {
			return askbi.Errorf(askbi.InvalidArgument, "%s", msg)
		}
		return askbi.Errorf(askbi.InvalidArgument, "the arguments do not match the tool's input schema")
	}
	return nil
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
