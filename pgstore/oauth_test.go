package pgstore_test

import (
	"testing"

	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/mcpserver/oauth/oauthtest"
	"github.com/askbi/askbi/pgstore"
)

func TestOAuthStore(t *testing.T) {
	oauthtest.RunStore(t, func(t *testing.T) oauth.Store { return pgstore.NewOAuthStore(MustStore(t)) })
}
