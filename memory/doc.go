// Package memory is explicit, personal, encrypted memory for Ask: a user
// saves short notes ("/remember our fiscal year starts in April"), manages
// them in settings, and Ask gives them to the model as untrusted user
// context when the team's external-AI policy allows it.
//
// Memory is personal to one user in one team. It is encrypted at rest with
// AES-256-GCM under a host-supplied Keyring, limited on the server (500
// characters each, 50 memories and 8,000 characters per user per team,
// enforced by the Store under a per-owner lock), and every change is
// audited without its text. It is never exposed through the MCP server and
// never decides a team, access or an approval.
//
// A host supplies a Store ([MemoryStore], or the PostgreSQL store of the
// reference server; memorytest.Run proves either), a Keyring
// ([StaticKeyring]) and its request gate (access.Gate).
//
// # Quick start
//
//	keys, err := memory.NewStaticKeyring("k1", map[string][]byte{"k1": key}) // key from memory.ParseKey
//	svc := memory.NewService(memory.NewMemoryStore(), keys, gate, &memory.Options{
//		Policy: memory.StaticPolicy(true), // the host's "allow memory with external AI" setting
//	})
//
//	// In chat: "/remember" saves without a model call.
//	if text, ok := memory.ParseRemember(message); ok {
//		if _, err := svc.Add(ctx, principal, text); err != nil {
//			return askbi.ErrorMessage(err)
//		}
//		return memory.SavedReply
//	}
//
//	// On each Ask turn, as untrusted user context:
//	notes, err := svc.ForModel(ctx, principal)
//
// # Text rules
//
// Line breaks are normalized to "\n" and surrounding whitespace is trimmed;
// characters are then counted as Unicode code points. Empty text, invalid
// UTF-8, control characters other than newline and tab, and text over the
// per-memory limit are InvalidArgument. The count and total limits are
// TooLarge, with a message telling the user what to do.
package memory
