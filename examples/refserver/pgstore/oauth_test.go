package pgstore_test

import (
	"testing"

	"github.com/askbi/askbi/examples/refserver/pgstore"
	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/mcpserver/oauth/oauthtest"
)

func TestOAuthStore(t *testing.T) {
	oauthtest.RunStore(t, func(t *testing.T) oauth.Store { return pgstore.NewOAuthStore(MustStore(t)) })
}
