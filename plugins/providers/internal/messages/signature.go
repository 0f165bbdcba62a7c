package messages

import (
	"encoding/base64"
	"strings"

	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// Gemini gives some function calls a thought signature, and Gemini 3
// refuses a later turn whose function calls come back without theirs. A
// chat completion carries it in the call's extra_content; Anthropic's
// tool_use block has no place for it, but its clients send the block back
// as it came. So the signature travels in the block's id: the call's id,
// signatureMark, and the signature in unpadded base64url (the characters
// Anthropic's ids are made of).
const signatureMark = "__sig_"

// toolUseID is the tool_use id of the chat tool call id with the thought
// signature sig ("" for none).
func toolUseID(id, sig string) string {
	if sig == "" {
		return id
	}
	return id + signatureMark + base64.RawURLEncoding.EncodeToString([]byte(sig))
}

// splitToolUseID is the chat tool call id and the thought signature of a
// tool_use id (see toolUseID); an id without a signature is the call's.
func splitToolUseID(id string) (callID, sig string) {
	i := strings.LastIndex(id, signatureMark)
	if i < 0 {
		return id, ""
	}
	b, err := base64.RawURLEncoding.DecodeString(id[i+len(signatureMark):])
	if err != nil || len(b) == 0 {
		return id, ""
	}
	return id[:i], string(b)
}

// chatCall is the chat tool call of a tool_use block: its id's call id,
// and, when signed is true (a provider that reads Gemini's signatures),
// the signature as the call's extra_content.
func chatCall(b messagesBlock, signed bool) chat.ToolCall {
	id, sig := splitToolUseID(b.ID)
	call := chat.NewCall(id, b.Name, b.Input)
	if signed {
		call = call.WithThoughtSignature(sig)
	}
	return call
}
