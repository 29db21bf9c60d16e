package connections

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/seal"
)

// Auth is how askbi authenticates to a remote MCP server.
type Auth string

// Auth kinds. An OAuth connection signs in through its server's
// authorization server (package signin) and keeps the tokens sealed.
const (
	AuthNone   Auth = "none"
	AuthBearer Auth = "bearer"
	AuthOAuth  Auth = "oauth"
)

// Connection is a team's connection to a remote MCP server (Streamable
// HTTP), as every response shows it: never its token, only HasToken.
type Connection struct {
	ID       string `json:"id"`
	TeamID   string `json:"team_id"`
	Name     string `json:"name"`
	URL      string `json:"url"`
	Auth     Auth   `json:"auth"`
	HasToken bool   `json:"has_token"` // a bearer token, or OAuth tokens of a completed sign-in
	// Provider is the verified provider (connresolve.Verified) the
	// connection was set up for, such as "PostHog"; "" for one set up by
	// hand.
	Provider string `json:"provider,omitempty"`
	// SignIn is where an OAuth connection's sign-in stands; nil for other
	// auth kinds.
	SignIn *SignIn `json:"sign_in,omitempty"`
	// Active is true once a discovery succeeded on the current URL; the
	// catalog shows the connection inactive until then.
	Active bool `json:"active"`
	// ToolFocus is the saved question a list of more than 250 tools is
	// matched against (the user's question, or one the admin typed).
	ToolFocus string    `json:"tool_focus,omitempty"`
	Discovery Discovery `json:"discovery"`
	// Version increases with every change of the connection or its tools.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SignInState is where an OAuth connection's sign-in stands.
type SignInState string

// Sign-in states.
const (
	// SignInNeeded: never signed in, or the tokens stopped working (a
	// failed refresh, a refused token): the connection is inactive until
	// a sign-in completes.
	SignInNeeded SignInState = "needed"
	// SignedIn: the tokens of a completed sign-in are kept, sealed.
	SignedIn SignInState = "signed_in"
)

// SignIn is an OAuth connection's sign-in, as shown: no token, no client
// secret.
type SignIn struct {
	State SignInState `json:"state"`
	// Issuer is the authorization server of the current tokens.
	Issuer string `json:"issuer,omitempty"`
	// Scopes are the scopes asked for (and granted, where the server
	// says).
	Scopes []string  `json:"scopes,omitempty"`
	At     time.Time `json:"at,omitzero"` // the last completed sign-in
	// StepUp are scopes the server asked for that the grant lacks: the
	// next sign-in requests them too (never silently).
	StepUp []string `json:"step_up,omitempty"`
	// Error is why the last sign-in, start or refresh failed.
	Error *ErrorInfo `json:"error,omitempty"`
}

// Discovery is what the last tool discovery found.
type Discovery struct {
	At time.Time `json:"at,omitzero"`
	// Tools counts the usable tools the server listed, Shown those in the
	// selection (all of them up to 250), Omitted the rest. Tool focus
	// applies only when Omitted > 0.
	Tools   int `json:"tools"`
	Shown   int `json:"shown"`
	Omitted int `json:"omitted"`
	// Excluded counts the tools that failed the schema safety checks; it
	// never triggers Tool focus.
	Excluded int `json:"excluded"`
	// LeftOut counts the tools the server listed past the most a
	// discovery keeps ([Options].MaxTools): not kept, not shown; the kept
	// ones are those approved before and the best matches of Tool focus.
	// Unread is set when the list ran on past the pages or bytes a
	// discovery reads (Options.MaxPages, MaxListBytes): how many more
	// tools there are is not known. A large count alone never fails a
	// discovery.
	LeftOut int  `json:"left_out"`
	Unread  bool `json:"unread,omitempty"`
	// Stale is set when the server said its tool list changed
	// (notifications/tools/list_changed) since this listing: the next
	// call lists the tools again, whatever the listing's age.
	Stale bool `json:"stale,omitempty"`
	// Error is the last attempt's failure, when it failed; the tool list
	// and approvals from before stay.
	Error *ErrorInfo `json:"error,omitempty"`
}

// ErrorInfo is a failure as it is kept and shown: its code and safe
// message.
type ErrorInfo struct {
	Code    askbi.Code `json:"code"`
	Message string     `json:"message"`
	At      time.Time  `json:"at"`
}

// NeedsSignIn is the failure of a call on an OAuth connection, named
// name, that holds no tokens: Forbidden, failure kind sign_in (its
// repair: open the connection).
func NeedsSignIn(name string) error {
	return dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil, "%s needs sign-in: open the connection and sign in", name)
}

// NewErrorInfo is err as a connection keeps it, failed at at.
func NewErrorInfo(err error, at time.Time) *ErrorInfo {
	return &ErrorInfo{Code: askbi.ErrorCode(err), Message: askbi.ErrorMessage(err), At: at}
}

// Hints are a remote tool's MCP annotations, untrusted: nil is missing.
type Hints struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// Tool is one discovered remote tool with its approval. Everything but
// Access comes from the remote server and is untrusted.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"` // capped at 1,000 characters
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Hints       Hints           `json:"hints"`
	// Class is [dataexec.ClassFromAnnotations] of Hints: missing means
	// unknown, treated as destructive.
	Class dataexec.Class `json:"class"`
	// SchemaHash and DescriptionHash are SHA-256 (hex) of the canonical
	// input schema and of the description.
	SchemaHash      string `json:"schema_hash"`
	DescriptionHash string `json:"description_hash"`
	// Present is false when the last discovery no longer listed the tool;
	// it is kept, with its approval, in case it comes back.
	Present bool `json:"present"`
	// Selected is true when the tool is in the shown selection.
	Selected bool `json:"selected"`
	// Excluded says why the schema safety checks excluded the tool; ""
	// when it passed. An excluded tool keeps no approval.
	Excluded string `json:"excluded,omitempty"`
	Access   Access `json:"access"`
}

// Access is an admin's decision on one tool: one switch that enables it
// for Ask and for datasets alike, and what was approved.
type Access struct {
	Allowed bool `json:"allowed"`
	// What the approval saw: the class, schema and description.
	ApprovedClass           dataexec.Class `json:"approved_class,omitempty"`
	ApprovedSchemaHash      string         `json:"approved_schema_hash,omitempty"`
	ApprovedDescriptionHash string         `json:"approved_description_hash,omitempty"`
	ApprovedBy              string         `json:"approved_by,omitempty"`
	ApprovedAt              time.Time      `json:"approved_at,omitzero"`
	// Reapprove says why a change that widens what the tool may do
	// (annotations now mutating, destructive or unknown; a changed input
	// schema) turned the approval off; "" when none did.
	Reapprove string `json:"reapprove,omitempty"`
	// DescriptionChanged is set when the description changed since the
	// approval: shown, never blocking.
	DescriptionChanged bool `json:"description_changed,omitempty"`
}

// ToolState is where a tool stands, as the connection page shows it.
type ToolState string

// Tool states.
const (
	ToolOff       ToolState = "off"       // not approved (new tools start here)
	ToolAllowed   ToolState = "allowed"   // usable by Ask and datasets
	ToolBlocked   ToolState = "blocked"   // marked destructive: cannot be allowed
	ToolReapprove ToolState = "reapprove" // a widening change turned it off
	ToolExcluded  ToolState = "excluded"  // failed the schema safety checks
	ToolRemoved   ToolState = "removed"   // no longer listed by the server
)

// State returns where t stands.
func (t Tool) State() ToolState {
	switch {
	case t.Excluded != "":
		return ToolExcluded
	case !t.Present:
		return ToolRemoved
	case t.Class == dataexec.ClassDestructive:
		return ToolBlocked
	case t.Access.Reapprove != "":
		return ToolReapprove
	case t.Access.Allowed:
		return ToolAllowed
	}
	return ToolOff
}

// Usable reports whether Ask and datasets may use t now.
func (t Tool) Usable() bool { return t.State() == ToolAllowed }

// Fingerprint identifies what t may do: its input schema and class. An
// approval of a remote call binds it, so a call approved before a
// widening change cannot run after it.
func (t Tool) Fingerprint() string {
	return hashHex([]byte(t.SchemaHash + "|" + string(t.Class)))[:32]
}

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Record is a connection as stored: the Connection and its sealed token.
type Record struct {
	Connection
	// Token is the bearer token (sealed with [TokenContext]), or for
	// OAuth the sign-in (client registration, tokens; package signin
	// seals and opens it), sealed with [seal.Seal] (KeyID "" when none),
	// bound to the team and connection ID. Only package signin opens it.
	Token seal.Box
	// SetupConversation is the Ask conversation the connection was set up
	// from, if any: repeated "Connect" clicks there reuse it.
	SetupConversation string
}

// State is a connection with its discovered tools, in discovery order.
type State struct {
	Record
	Tools []Tool
}

// Tool returns the tool called name.
func (s *State) Tool(name string) (*Tool, bool) {
	i := slices.IndexFunc(s.Tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return nil, false
	}
	return &s.Tools[i], true
}

// Ready reports whether the connection can be called now: active, and
// signed in when it uses OAuth. Ask's tools, the resolver's usable
// connections and the calls (package remote) all ask it, so they cannot
// disagree.
func (s State) Ready() bool {
	return s.Active && (s.Auth != AuthOAuth || s.HasToken && s.SignIn != nil && s.SignIn.State == SignedIn)
}

// TokenContext is the [seal.Context] a bearer token of connection id of
// team teamID is sealed with: [Service] seals it, package signin opens it.
func TokenContext(teamID, id string) []byte { return seal.Context("askbi.mcp.token.v1", teamID, id) }
