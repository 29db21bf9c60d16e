package oauthtest_test

import (
	"testing"

	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/mcpserver/oauth/oauthtest"
)

// An OAuth store's own tests run the suite; newStore gives each subtest
// a fresh, empty store. Here it is the in-memory store; a SQL adapter
// returns one on a fresh, migrated database.
func ExampleRunStore() {
	// func TestOAuthStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		oauthtest.RunStore(t, func(*testing.T) oauth.Store { return oauth.NewMemoryStore() })
	}
}
