package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Command is the chat command that saves a memory.
const Command = "/remember"

// SavedReply is what the chat answers, without a model call, when a
// /remember message was saved.
const SavedReply = "Saved to memory."

// ParseRemember reports whether message is a /remember command and returns
// the text to save, trimmed of surrounding whitespace. The command is
// case-sensitive, may follow leading whitespace, and must be followed by
// whitespace or the end of the message: "/remember" alone gives ok with an
// empty text, which [Service.Add] rejects as InvalidArgument, while
// "/remembering" or "/Remember" is an ordinary message.
func ParseRemember(message string) (text string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimLeftFunc(message, unicode.IsSpace), Command)
	if !ok {
		return "", false
	}
	if r, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(r) {
		return "", false
	}
	return strings.TrimSpace(rest), true
}
