package oauth

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/httpjson"
)

// Setup is how to connect one MCP client, for the account MCP settings.
type Setup struct {
	Client string   `json:"client"`
	Steps  []string `json:"steps"`
}

// Setups returns the client setup instructions for the MCP server at
// mcpURL: Claude, ChatGPT, Cursor and the MCP Inspector.
func Setups(mcpURL string) []Setup {
	return []Setup{
		{"Claude", []string{
			"Claude (web and desktop): Settings → Connectors → Add custom connector; paste " + mcpURL + " and press Connect.",
			"Claude Code: claude mcp add --transport http askbi " + mcpURL + ", then run /mcp and choose Authenticate.",
			"Sign in, choose one team and the permissions on the consent page, and press Allow.",
		}},
		{"ChatGPT", []string{
			"Settings → Apps & Connectors → Advanced → turn on Developer mode.",
			"Create a connector: MCP server URL " + mcpURL + ", authentication OAuth.",
			"Sign in, choose one team and the permissions on the consent page, and press Allow.",
		}},
		{"Cursor", []string{
			`Add to ~/.cursor/mcp.json: {"mcpServers": {"askbi": {"url": "` + mcpURL + `"}}}`,
			"Cursor Settings → MCP → askbi → Needs login; sign in and press Allow on the consent page.",
		}},
		{"MCP Inspector", []string{
			"npx @modelcontextprotocol/inspector, transport Streamable HTTP, URL " + mcpURL + ".",
			"Press Connect (or Open Auth Settings → Quick OAuth Flow); sign in and press Allow on the consent page.",
		}},
	}
}

// connectedClient is one grant as the account settings list it.
type connectedClient struct {
	ID         string    `json:"id"` // the grant ID
	AppName    string    `json:"app_name"`
	Unverified bool      `json:"unverified"` // app names are the app's own claim
	ReturnHost string    `json:"return_host"`
	TeamID     string    `json:"team_id"`
	TeamName   string    `json:"team_name"`
	Scopes     []string  `json:"scopes"`
	CreatedAt  time.Time `json:"created_at"`
}

// accountRoutes mounts the account MCP settings: JSON routes for the
// signed-in user.
func (s *Server) accountRoutes(mux *http.ServeMux, cop *http.CrossOriginProtection) {
	mux.HandleFunc("GET /account/mcp", s.accountSettings)
	mux.HandleFunc("GET /account/mcp/clients", s.accountClients)
	mux.Handle("DELETE /account/mcp/clients/{id}", cop.Handler(http.HandlerFunc(s.accountRemove)))
}

// accountUser returns the signed-in user, or answers Unauthenticated.
func (s *Server) accountUser(w http.ResponseWriter, r *http.Request) (string, bool) {
	user, err := s.users.SignedIn(r)
	if err == nil && user == "" {
		err = askbi.Errorf(askbi.Unauthenticated, "sign in to manage your MCP clients")
	}
	if err != nil {
		httpjson.WriteError(w, r, s.log, err)
		return "", false
	}
	return user, true
}

func (s *Server) accountSettings(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.accountUser(w, r); !ok {
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{
		"server_url":             s.resource,
		"resource_metadata_url":  s.issuer + "/.well-known/oauth-protected-resource" + s.opts.MCPPath,
		"authorization_server":   s.issuer,
		"scopes":                 scopeArgs(access.AllScopes),
		"default_write_scopes":   false,
		"setup":                  Setups(s.resource),
		"connected_clients_path": "/account/mcp/clients",
	})
}

func (s *Server) accountClients(w http.ResponseWriter, r *http.Request) {
	user, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	grants, err := s.store.Grants(ctx, user)
	if err != nil {
		httpjson.WriteError(w, r, s.log, err)
		return
	}
	teams, err := s.users.Teams(ctx, user)
	if err != nil {
		httpjson.WriteError(w, r, s.log, err)
		return
	}
	names := map[string]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	out := []connectedClient{}
	for _, g := range grants {
		c, err := s.client(ctx, g.ClientID)
		if err != nil && isDocumentID(g.ClientID) {
			// A document that cannot be read now: the grant is still
			// listed, named by its client_id's host.
			u, _ := url.Parse(g.ClientID)
			c, err = Client{ID: g.ClientID, Name: displayHost(u)}, nil
		}
		if err != nil {
			httpjson.WriteError(w, r, s.log, err)
			return
		}
		host := ""
		if len(c.RedirectURIs) > 0 {
			if u, err := url.Parse(c.RedirectURIs[0]); err == nil {
				host = returnHost(u)
			}
		}
		out = append(out, connectedClient{ID: g.ID, AppName: c.Name, Unverified: true, ReturnHost: host,
			TeamID: g.TeamID, TeamName: names[g.TeamID], Scopes: scopeArgs(g.Scopes), CreatedAt: g.CreatedAt})
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"clients": out})
}

// accountRemove revokes one of the user's grants at once: its tokens stop
// working on the next call. Another user's grant is not_found.
func (s *Server) accountRemove(w http.ResponseWriter, r *http.Request) {
	user, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	g, err := s.store.Grant(r.Context(), id)
	if err == nil && (g.UserID != user || !g.RevokedAt.IsZero()) || askbi.ErrorCode(err) == askbi.NotFound {
		httpjson.WriteError(w, r, s.log, askbi.Errorf(askbi.NotFound, "connected client not found"))
		return
	}
	if err != nil {
		httpjson.WriteError(w, r, s.log, err)
		return
	}
	s.revokeGrant(r.Context(), id, "removed_by_user")
	w.WriteHeader(http.StatusNoContent)
}

// scopeList is the space-separated form of scopes.
func scopeList(scopes []access.Scope) string { return strings.Join(scopeArgs(scopes), " ") }
