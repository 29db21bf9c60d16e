package connresolve

// Verified is the verified MCP provider catalog: official provider names,
// official remote endpoints and safe setup notes, reviewed by hand. It is
// one static list on purpose: no database, no editor, no remote catalog and
// no crawler, so nothing a remote party writes can put an endpoint here.
// An unknown provider opens manual MCP setup instead.
//
// Add a provider only with its vendor's documented remote MCP endpoint
// (HTTPS) and sign-in method.
var Verified = []Provider{
	{
		Name:         "PostHog",
		Aliases:      []string{"posthog", "post hog"},
		Capabilities: []Capability{ProductAnalytics, WebAnalytics},
		MCPURL:       "https://mcp.posthog.com/mcp",
		OAuth:        true,
		Docs:         "https://posthog.com/docs/model-context-protocol",
		Notes: "Sign in with your PostHog account. PostHog's MCP server offers many tools: " +
			"approve only the read-only query tools you want Ask and datasets to use " +
			"(PostHog documents a read-only filter for its tool list).",
	},
}
