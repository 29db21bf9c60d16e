package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/seal"
)

// demoStore keeps the demo's sessions and credentials: pgstore.DemoStore
// when the state is in PostgreSQL, so that every instance on the
// database accepts the same sessions and hands out the same credentials,
// and memDemoStore otherwise.
type demoStore interface {
	sessionStore
	// Secret returns NotFound for an unknown name.
	Secret(ctx context.Context, name string) (string, error)
	// Claim stores value under name unless one is there, and returns
	// the value stored.
	Claim(ctx context.Context, name, value string) (string, error)
	// Replace stores value in place of old, unless another caller
	// replaced old first, and returns the value stored.
	Replace(ctx context.Context, name, old, value string) (string, error)
}

// memDemoStore is a demoStore in memory.
type memDemoStore struct {
	memSessions
	mu      sync.Mutex
	secrets map[string]string
}

func (m *memDemoStore) Secret(_ context.Context, name string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.secrets[name]
	if !ok {
		return "", askbi.Errorf(askbi.NotFound, "no such secret")
	}
	return v, nil
}

func (m *memDemoStore) Claim(_ context.Context, name, value string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.secrets == nil {
		m.secrets = map[string]string{}
	}
	if v, ok := m.secrets[name]; ok {
		return v, nil
	}
	m.secrets[name] = value
	return value, nil
}

func (m *memDemoStore) Replace(_ context.Context, name, old, value string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.secrets[name] == old {
		m.secrets[name] = value
	}
	return m.secrets[name], nil
}

// demoCreds hands out the demo's credentials once per store: the first
// instance to start creates each and claims it; every later one, and any
// started at the same time, reuses what was claimed. A start never
// revokes what another instance handed out. Secrets are stored sealed
// with the server's keyring, bound to their name.
type demoCreds struct {
	store demoStore
	keys  seal.Keyring
}

func (d demoCreds) seal(name, plain string) (string, error) {
	b, err := seal.Seal(d.keys, []byte(plain), seal.Context("demo-secret", name))
	if err != nil {
		return "", err
	}
	return b.KeyID + "." + base64.RawStdEncoding.EncodeToString(b.Nonce) + "." + base64.RawStdEncoding.EncodeToString(b.Ciphertext), nil
}

// open returns the secret sealed in v, or false when it cannot be opened
// (another keyring, a damaged value).
func (d demoCreds) open(name, v string) (string, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return "", false
	}
	nonce, err1 := base64.RawStdEncoding.DecodeString(parts[1])
	data, err2 := base64.RawStdEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil {
		return "", false
	}
	plain, err := seal.Open(d.keys, seal.Box{KeyID: parts[0], Nonce: nonce, Ciphertext: data}, seal.Context("demo-secret", name))
	return string(plain), err == nil
}

// secret returns the secret claimed under name: the stored one when
// valid says it still works, else a new one from create, claimed in its
// place. discard undoes a created secret that lost the claim to another
// instance's.
func (d demoCreds) secret(ctx context.Context, name string, valid func(string) bool, create func() (string, error), discard func(string)) (string, error) {
	for range 3 {
		stored, err := d.store.Secret(ctx, name)
		if err != nil && askbi.ErrorCode(err) != askbi.NotFound {
			return "", err
		}
		if err == nil {
			if plain, ok := d.open(name, stored); ok && valid(plain) {
				return plain, nil
			}
		}
		plain, err := create()
		if err != nil {
			return "", err
		}
		sealed, err := d.seal(name, plain)
		if err != nil {
			return "", err
		}
		var won string
		if stored == "" {
			won, err = d.store.Claim(ctx, name, sealed)
		} else {
			won, err = d.store.Replace(ctx, name, stored, sealed)
		}
		if err != nil {
			return "", err
		}
		if won == sealed {
			return plain, nil
		}
		discard(plain) // another instance claimed first: use its secret
	}
	return "", errors.New("demo credentials: could not claim " + name)
}

// session returns the demo session token of user in team.
func (d demoCreds) session(ctx context.Context, s *sessions, team, user string) (string, error) {
	return d.secret(ctx, "session:"+team+"/"+user,
		func(tok string) bool { _, err := s.lookup(ctx, tok); return err == nil },
		func() (string, error) {
			tok := newToken()
			return tok, s.create(ctx, tok, team, user)
		},
		func(string) {}) // an unclaimed session is never handed out
}

// apiKey returns the demo API key of principal dp, owned by owner.
func (d demoCreds) apiKey(ctx context.Context, keys *access.Keys, owner access.Principal, dp demoPrincipal) (string, error) {
	name := "demo:" + dp.Name
	return d.secret(ctx, "key:"+dp.Name,
		func(secret string) bool {
			p, err := keys.Verify(ctx, secret)
			return err == nil && p.UserID == dp.User && p.TeamID == dp.Team
		},
		func() (string, error) {
			secret, _, err := keys.Create(ctx, owner, access.KeyRequest{Name: name, Scopes: dp.Scopes, Projects: dp.Projects})
			return secret, err
		},
		func(secret string) {
			if p, err := keys.Verify(ctx, secret); err == nil {
				keys.Revoke(ctx, owner, p.CredentialID)
			}
		})
}

// demoToken is the session token of the named demo principal.
func (a *app) demoToken(name string) (string, bool) {
	e, ok := a.creds.principal(name)
	return e.SessionToken, ok
}

// principal returns the entry of the named demo principal.
func (c credentials) principal(name string) (credentialEntry, bool) {
	for _, e := range c.Principals {
		if e.Name == name {
			return e, true
		}
	}
	return credentialEntry{}, false
}

// credentials is the -credentials-file document.
type credentials struct {
	BaseURL              string `json:"base_url"`
	MCPURL               string `json:"mcp_url"`
	WarehouseDatabaseURL string `json:"warehouse_database_url,omitempty"`
	// AnalyticsMCP is the demo's own analytics MCP server (loopback), for
	// trying the connection routes with a server of your own.
	AnalyticsMCP *mcpCredentials `json:"analytics_mcp,omitempty"`
	// DemoOAuthMCP is Demo Analytics, the demo's MCP server behind OAuth
	// (loopback; it signs in at once), for trying save and connect.
	DemoOAuthMCP *mcpCredentials   `json:"demo_oauth_mcp,omitempty"`
	Principals   []credentialEntry `json:"principals"`
}

type mcpCredentials struct {
	URL   string `json:"url"`
	Token string `json:"token,omitempty"`
}

type credentialEntry struct {
	Name         string   `json:"name"`
	User         string   `json:"user"`
	Team         string   `json:"team"`
	Role         string   `json:"role"`
	Projects     any      `json:"projects"` // "all" or a list of project names
	Scopes       []string `json:"scopes"`
	APIKey       string   `json:"api_key"`
	SessionToken string   `json:"session_token"`
}

// issueCredentials hands out one API key per demo principal and one
// chat session per demo user (alice-read shares alice's: a session is not
// scope-limited), claimed once per store (see demoCreds): every instance
// on one database hands out the same ones, and a start revokes nothing
// another instance handed out.
//
// With -demo-sign-in, the page may sign in as each demo user.
func (a *app) issueCredentials(ctx context.Context, cfg config, checker *access.Checker, creds demoCreds) error {
	if cfg.demoSignIn {
		a.demoSignIn = &demoSignIn{users: demoUsers, token: a.demoToken, secure: strings.HasPrefix(a.base, "https://")}
	}
	a.creds.BaseURL, a.creds.MCPURL = a.base, a.base+"/mcp"
	for _, dp := range demoPrincipals {
		owner, err := checker.Live(ctx, access.Principal{UserID: dp.User, TeamID: dp.Team, Auth: access.AuthSession})
		if err != nil {
			return err
		}
		secret, err := creds.apiKey(ctx, a.keys, owner, dp)
		if err != nil {
			return err
		}
		tok, err := creds.session(ctx, a.sessions, dp.Team, dp.User)
		if err != nil {
			return err
		}
		var projects any = "all"
		if !dp.Projects.All {
			var names []string
			for _, id := range dp.Projects.IDs {
				names = append(names, projectNames[id])
			}
			projects = names
		}
		a.creds.Principals = append(a.creds.Principals, credentialEntry{
			Name: dp.Name, User: dp.User, Team: dp.Team, Role: string(dp.Role), Projects: projects, Scopes: dp.Scopes, APIKey: secret,
			SessionToken: tok,
		})
	}
	return nil
}

func (a *app) writeCredentials(path string) error {
	b, err := json.MarshalIndent(a.creds, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// announce prints where the server serves what and how to sign in, and
// writes the -credentials-file.
func (a *app) announce(out io.Writer, cfg config) error {
	signIn := "open it and pick a demo user (alice, bob, vic or carol)"
	if !cfg.demoSignIn {
		signIn = "paste a session_token from -credentials-file (-demo-sign-in is off)"
	}
	fmt.Fprintf(out, "askbi reference server\n  storage:  %s\n  model:    %s\n  web:      %s/  (%s)\n  chat API: %s/ai/ (Authorization: Bearer <session_token>)\n  mcp:      %s (OAuth: add this URL to Claude, ChatGPT, Cursor or the Inspector; or Authorization: Bearer <api_key>)\n  sign-in:  %s/signin (a session_token; the OAuth consent page asks for it)\n",
		a.storage, a.model, a.base, signIn, a.base, a.oauth.Resource(), a.base)
	if cfg.credentialsFile == "" {
		fmt.Fprintf(out, "  credentials: pass -credentials-file PATH to get API keys and session tokens\n")
		return nil
	}
	if err := a.writeCredentials(cfg.credentialsFile); err != nil {
		return err
	}
	fmt.Fprintf(out, "  credentials: %s\n", cfg.credentialsFile)
	return nil
}
