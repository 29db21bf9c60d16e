package access

import "net/http"

// Authenticate maps a request to its principal, or fails with
// Unauthenticated. It is the one authentication shape of every HTTP
// adapter (the chat API, the connection routes, the Data API). Which
// credentials pass is the host's decision: the chat and connection routes
// want the product session alone (never an API key or MCP token); the
// Data API may take API keys, whose scopes the executor applies.
type Authenticate func(r *http.Request) (Principal, error)
