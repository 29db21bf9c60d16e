package access

import (
	"context"
	"net/http"
	"strings"

	"github.com/askbi/askbi"
)

// TokenLookup returns the principal of a bearer token: Unauthenticated
// for a token it does not accept, another code (Unavailable) when it
// cannot be checked now. It is the one shape of every token check: a
// host's product sessions (its login, which [SessionAuth] puts on HTTP),
// API keys ([Keys.Verify]), the MCP authorization server's access tokens
// (oauth.Server.Verify); mcpserver.New takes one, [AnyToken] joins several.
type TokenLookup func(ctx context.Context, token string) (Principal, error)

// AnyToken returns a [TokenLookup] that accepts what any of lookups
// accepts, tried in order: API keys and OAuth access tokens verify into
// the same principal. A failure other than Unauthenticated stops the
// search, so a store that is down is never read as a wrong token.
func AnyToken(lookups ...TokenLookup) TokenLookup {
	return func(ctx context.Context, token string) (Principal, error) {
		err := error(askbi.Errorf(askbi.Unauthenticated, "invalid credential"))
		for _, l := range lookups {
			p, lerr := l(ctx, token)
			if lerr == nil {
				return p, nil
			}
			if askbi.ErrorCode(lerr) != askbi.Unauthenticated {
				return Principal{}, lerr
			}
			err = lerr
		}
		return Principal{}, err
	}
}

// SessionOptions configures [SessionAuth]. The zero value is valid: a
// bearer session token only.
type SessionOptions struct {
	// Cookie names the cookie holding a browser's session token, read
	// when the request has no Authorization header (the product pages,
	// the OAuth consent page). Empty: no cookie is read. A request the
	// cookie would authenticate passes Go's http.CrossOriginProtection
	// first: one from another site with a method that may change
	// something (POST, PUT, PATCH, DELETE) is Forbidden, so no route a
	// cookie authenticates can be driven by another site's form or
	// script, whatever handler serves it.
	Cookie string
	// Keys, when set, also accepts a bearer API key that is not a
	// session (the Data API, whose executor applies the key's scopes).
	// The chat and connection routes leave it nil: they take the product
	// session alone.
	Keys *Keys
	// Message is the message of every refusal. Default "sign in: send
	// Authorization: Bearer <session_token>".
	Message string
}

// SessionAuth returns the Authenticate of a host's product session. An
// Authorization header, when sent, is the only credential looked at: a
// bearer session token, or else with opts.Keys an API key. Without one,
// the opts.Cookie cookie's session, for a request from the same site or
// with a safe method (else Forbidden). Every refused credential is
// Unauthenticated with opts.Message, so a caller cannot tell which kind
// was tried; any other failure of lookup or of [Keys.Verify] (Unavailable)
// is returned as it is, so a transient failure is never a sign-out.
func SessionAuth(lookup TokenLookup, opts *SessionOptions) Authenticate {
	var o SessionOptions
	if opts != nil {
		o = *opts
	}
	if o.Message == "" {
		o.Message = "sign in: send Authorization: Bearer <session_token>"
	}
	refused := func(err error) (Principal, error) {
		if err == nil || askbi.ErrorCode(err) == askbi.Unauthenticated {
			return Principal{}, askbi.Errorf(askbi.Unauthenticated, "%s", o.Message)
		}
		return Principal{}, err
	}
	cop := http.NewCrossOriginProtection()
	return func(r *http.Request) (Principal, error) {
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, tok, ok := strings.Cut(h, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return refused(nil)
			}
			tok = strings.TrimSpace(tok)
			p, err := lookup(r.Context(), tok)
			if askbi.ErrorCode(err) == askbi.Unauthenticated && o.Keys != nil {
				p, err = o.Keys.Verify(r.Context(), tok)
			}
			if err != nil {
				return refused(err)
			}
			return p, nil
		}
		if o.Cookie != "" {
			if c, err := r.Cookie(o.Cookie); err == nil {
				if cop.Check(r) != nil {
					return Principal{}, askbi.Errorf(askbi.Forbidden, "a request from another site is refused here")
				}
				p, err := lookup(r.Context(), c.Value)
				if err != nil {
					return refused(err)
				}
				return p, nil
			}
		}
		return refused(nil)
	}
}
