// Command oauthclient connects to one remote MCP server the way a team's
// OAuth connection does, headlessly: it runs askbi's outbound OAuth
// (package dataexec/mcpsource, on in-memory state) against the server
// URL, plays the browser by following the authorization URL to the
// redirect (a provider that approves at once, as the MCP conformance
// suite's does), completes the callback, approves the tools and calls
// one. It is the client the conformance suite's auth scenarios run:
//
//	conformance client --suite auth --command "go run ./examples/oauthclient -client-metadata-url https://conformance-test.local/client-metadata.json"
//
// The suite appends the server URL and sets MCP_CONFORMANCE_SCENARIO and
// MCP_CONFORMANCE_CONTEXT (a pre-registered client's client_id,
// client_secret and issuer, for auth/pre-registration).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/seal"
)

// redirectURL is where the provider sends the browser back; nothing
// listens there: the client reads the redirect itself.
const redirectURL = "http://localhost:3000/callback"

// maxSignIns bounds the sign-ins of one run: a server that keeps asking
// for more scopes (step-up) gets three, then the client gives up.
const maxSignIns = 3

func main() {
	metadataURL := flag.String("client-metadata-url", "", "the client ID metadata document URL (https) to use where the server supports them")
	tool := flag.String("tool", "test-tool", "the tool to call after signing in (the first listed when absent)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: oauthclient [-client-metadata-url URL] [-tool NAME] SERVER_URL")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, flag.Arg(0), *metadataURL, *tool, os.Getenv("MCP_CONFORMANCE_CONTEXT"), log); err != nil {
		log.Error("oauthclient", "scenario", os.Getenv("MCP_CONFORMANCE_SCENARIO"), "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serverURL, metadataURL, toolName, confCtx string, log *slog.Logger) error {
	var pre struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Issuer       string `json:"issuer"`
	}
	if confCtx != "" {
		json.Unmarshal([]byte(confCtx), &pre)
	}
	opts := signin.Options{RedirectURL: redirectURL, ClientMetadataURL: metadataURL, ClientName: "askbi", Logger: log}
	if pre.ClientID != "" {
		opts.Clients = []signin.OAuthClient{{Issuer: pre.Issuer, ClientID: pre.ClientID, ClientSecret: pre.ClientSecret}}
	}
	dir := access.NewMemoryDirectory()
	dir.SetMember("team", "owner", access.RoleOwner, access.AllProjects())
	keys, err := seal.NewStaticKeyring("k", map[string][]byte{"k": seal.GenerateKey()})
	if err != nil {
		return err
	}
	gate := access.NewGate(access.NewChecker(dir, nil), access.NewMemoryRateLimiter(&access.RateOptions{Rate: 1000, Burst: 1000}))
	conns := connections.NewService(connections.NewMemoryStore(), keys, gate, &connections.Options{Logger: log})
	sign := signin.New(conns, keys, &opts)
	svc := &client{conns, sign, remote.New(conns, sign, &remote.Options{Logger: log})}
	owner := access.Principal{UserID: "owner", TeamID: "team", Auth: access.AuthSession}

	conn, err := conns.Create(ctx, owner, connections.Input{Name: "Server", URL: serverURL, Auth: connections.AuthOAuth})
	if err != nil {
		return err
	}
	var last error
	for attempt := range maxSignIns {
		if err := signIn(ctx, svc, owner, conn.ID); err != nil {
			last = fmt.Errorf("sign-in %d: %w", attempt+1, err)
			if retry(svc, ctx, owner, conn.ID, err) {
				continue
			}
			return last
		}
		err := callTool(ctx, svc, owner, conn.ID, toolName)
		if err == nil {
			return nil
		}
		last = fmt.Errorf("call after sign-in %d: %w", attempt+1, err)
		if !retry(svc, ctx, owner, conn.ID, err) {
			return last
		}
	}
	return last
}

// client is the connection service, its sign-in and its remote tools.
type client struct {
	*connections.Service
	sign  *signin.Service
	tools *remote.Tools
}

// retry reports whether a failure asks for another sign-in: the server
// wants more scopes, or no longer takes the tokens (say, after moving to
// another authorization server).
func retry(svc *client, ctx context.Context, p access.Principal, id string, err error) bool {
	if kind, _ := dataexec.FailureOf(err); kind == dataexec.FailSignIn {
		return true
	}
	c, gerr := svc.Get(ctx, p, id)
	return gerr == nil && c.SignIn != nil && len(c.SignIn.StepUp) > 0 && askbi.ErrorCode(err) == askbi.Forbidden
}

// signIn starts the sign-in, follows the authorization URL to the
// redirect, and completes the callback with what it carries.
func signIn(ctx context.Context, svc *client, p access.Principal, id string) error {
	st, err := svc.sign.StartOAuth(ctx, p, id, "")
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.AuthorizationURL, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return fmt.Errorf("the authorization endpoint answered %d without a redirect", resp.StatusCode)
	}
	q := loc.Query()
	_, err = svc.sign.CompleteOAuth(ctx, signin.OAuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss"),
		Error: q.Get("error"), Binding: st.Binding})
	return err
}

// callTool allows every tool the connection lists (this client stands for
// the admin who would) and calls the one named, or the first.
func callTool(ctx context.Context, svc *client, p access.Principal, id, name string) error {
	page, err := svc.Tools(ctx, p, id, connections.ToolQuery{})
	if err != nil {
		return err
	}
	if len(page.Tools) == 0 {
		return errors.New("the server lists no tools")
	}
	pick := page.Tools[0].Name
	for _, t := range page.Tools {
		svc.SetAccess(ctx, p, id, t.Name, true)
		if t.Name == name {
			pick = name
		}
	}
	approved, _, err := svc.tools.ApprovedTools(ctx, p)
	if err != nil {
		return err
	}
	for _, at := range approved {
		if at.Tool.Name == pick {
			_, err := svc.tools.Call(ctx, p, id, pick, at.Tool.Fingerprint(), json.RawMessage(`{}`))
			return err
		}
	}
	return fmt.Errorf("tool %s could not be approved", pick)
}
