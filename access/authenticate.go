package access

import "net/http"

// Authenticate maps a request to its principal, or fails with
// Unauthenticated. It is the one authentication shape of every HTTP
// adapter (the chat API, the connection routes, the Data API). Which
// credentials pass is the host's decision: the chat and connection routes
// want the product session alone (never an API key or MCP token); the
// Data API may take API keys, whose scopes the executor applies. One
// that accepts a browser's cookie must refuse another site's requests
// that could change something, as [SessionAuth] with a Cookie does: the
// adapters cannot tell how a request was authenticated.
type Authenticate func(r *http.Request) (Principal, error)
