package signin

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/mcpoauth"
)

// TestOAuthFailureTable: each reason an OAuth step fails for reads as its
// own code and message naming the connection; an unknown one as
// unavailable; an askbi error passes as it is.
func TestOAuthFailureTable(t *testing.T) {
	for _, tc := range []struct {
		reason mcpoauth.Reason
		code   askbi.Code
		msg    string
	}{
		{mcpoauth.ReasonUnreachable, askbi.Unavailable, "the sign-in server of Acme could not be reached or is busy; try again later"},
		{mcpoauth.ReasonTooLarge, askbi.TooLarge, "the sign-in server of Acme sent an answer larger than askbi accepts; nothing was connected"},
		{mcpoauth.ReasonRefused, askbi.Forbidden, "the sign-in server of Acme is at an address askbi may not call (link-local, cloud metadata, private, or too many redirects)"},
		{mcpoauth.ReasonResourceMismatch, askbi.InvalidResult, "Acme's sign-in metadata is for another server than this connection's URL, so askbi will not sign in there"},
		{mcpoauth.ReasonIssuerMismatch, askbi.InvalidResult, "Acme's authorization server describes itself as another issuer, so askbi will not sign in there"},
		{mcpoauth.ReasonNoPKCE, askbi.InvalidResult, "Acme's authorization server does not offer S256 PKCE, which askbi requires"},
		{mcpoauth.ReasonInvalidMetadata, askbi.InvalidResult, "Acme's sign-in metadata could not be used; check the connection's URL"},
		{mcpoauth.ReasonNoRegistration, askbi.Unsupported, "Acme's authorization server offers no client registration, and no client is registered for it here"},
		{mcpoauth.ReasonRegistration, askbi.Unavailable, "Acme's authorization server could not register askbi right now; try again later"},
		{mcpoauth.ReasonRegistrationNo, askbi.Unsupported, "Acme's authorization server refused to register askbi; check the connection's URL, or register a client with the provider for askbi to use"},
		{mcpoauth.ReasonIssMissing, askbi.InvalidResult, "the sign-in answer did not come from Acme's authorization server (its iss does not match), so it was refused"},
		{mcpoauth.ReasonIssMismatch, askbi.InvalidResult, "the sign-in answer did not come from Acme's authorization server (its iss does not match), so it was refused"},
		{mcpoauth.ReasonGrantRejected, askbi.Forbidden, "Acme did not accept the sign-in code (expired, used, or for another sign-in); start the sign-in again"},
		{mcpoauth.ReasonClientRefused, askbi.Forbidden, "Acme's authorization server refused askbi's client; start the sign-in again"},
		{mcpoauth.ReasonTokenResource, askbi.InvalidResult, "Acme issued a token for another resource, so it was refused"},
		{mcpoauth.ReasonTokenError, askbi.Forbidden, "Acme's authorization server refused the sign-in; start it again"},
		{mcpoauth.ReasonTokenInvalid, askbi.InvalidResult, "Acme's authorization server answered with a token askbi cannot use"},
		{"something_new", askbi.Unavailable, "the sign-in with Acme failed; try again"},
	} {
		t.Run(string(tc.reason), func(t *testing.T) {
			cause := &mcpoauth.Error{Reason: tc.reason, Err: errors.New("token endpoint said no")}
			err := oauthFailure(cause, "Acme")
			type got struct {
				Code  askbi.Code
				Msg   string
				Cause bool
			}
			if diff := cmp.Diff(got{tc.code, tc.msg, true}, got{askbi.ErrorCode(err), askbi.ErrorMessage(err), errors.Is(err, cause)}); diff != "" {
				t.Errorf("oauthFailure(%s) mismatch (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	own := askbi.Errorf(askbi.Conflict, "mine")
	if err := oauthFailure(own, "Acme"); err != own {
		t.Errorf("oauthFailure(askbi error) = %v, want it as it is", err)
	}
}
