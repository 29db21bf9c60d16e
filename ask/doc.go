// Package ask is the Ask orchestrator: an in-product AI data assistant that
// works on the exact dashboards, charts and datasets the user selected.
//
// A turn saves the user's question, then loops model and tool calls until
// an answer. Every tool the model may see is registered explicitly
// (Registry): the product's own actions ([ProductTools], thin calls into the
// same dataexec.Executor the MCP server uses) and, per turn, the remote
// MCP tools an admin approved (Options.Tools, [RemoteTools]), and
// list_connections ([ListConnections]), which finds the shortest safe path
// to a provider the team has not connected and answers with a typed
// [ConnectionSetup] card, resolved afresh when the conversation opens.
// Read-only calls run; mutating, destructive and unknown ones wait for a
// single-use Approval bound to the user, conversation, tool (for a remote
// tool also its connection and definition fingerprint, Tool.Target) and
// the hash of the canonical arguments, which only Approve can use, and whose result
// is kept as a Receipt. A turn streams typed Events (as SSE or one JSON
// list: package askhttp), and leaves a work summary built from the saved
// tool calls, never written by the model. What tool output reaches the
// model is decided per team (Sharing), live and again on every replay;
// selected items, memory, tool data and attached files (SendRequest's
// Attachments: text as <ATTACHED-FILE> blocks, images as image parts for a
// Provider that is an [ImageReader]) reach it as untrusted data only, and
// secrets are masked everywhere.
//
// A host supplies a Provider (package ask/provider/mock, openai,
// anthropic), the request gate (access.Gate), the executor, and its
// Stores: small interfaces, one per job ([ConversationStore], [TurnStore],
// [ContextStore], [ToolRunStore], [ApprovalStore], [ReceiptStore]), with
// in-memory ones here ([NewMemoryStores]), each proven by a suite of
// package asktest. Every method of Assistant is one request: it passes
// the gate once and needs access.RightUseAssistant.
//
// # Quick start
//
//	gate := access.NewGate(access.NewChecker(directory, nil), nil)
//	exec := dataexec.NewExecutor(catalog, sources, nil)
//	tools, err := ask.NewRegistry(ask.ProductTools(exec)...)
//	assistant := ask.New(mock.New(), gate, exec, ask.NewMemoryStores(), tools, nil)
//	conv, err := assistant.CreateConversation(ctx, principal)
//	emit, events := ask.Collect()
//	err = assistant.Send(ctx, principal, ask.SendRequest{ConversationID: conv.ID, Message: "show signups by week"}, emit)
//
// Mount package askhttp to serve it as the chat HTTP API.
package ask
