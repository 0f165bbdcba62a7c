package gemini

import (
	"encoding/json"
	"fmt"
)

// CountTokensRequest turns a chat completion body into the model name and
// the countTokens request that counts its tokens as a generateContent
// request (system instruction, tools and generation config included). It
// serves /v1/messages/count_tokens, which the messages wrapper translates
// into a chat request first (messages.Options.CountTokens). Gemini's API
// takes the request inside generateContentRequest, with the model's
// resource name; Vertex AI's (vertex) takes its fields at the top, without
// toolConfig, which its countTokens does not know.
func CountTokensRequest(body []byte, vertex bool) (model string, out []byte, err error) {
	model, gr, err := translateRequest(body, false)
	if err != nil {
		return "", nil, err
	}
	if vertex {
		gr.ToolConfig = nil
		out, err = json.Marshal(gr)
		return model, out, err
	}
	type namedRequest struct {
		Model string `json:"model"`
		*generateRequest
	}
	out, err = json.Marshal(struct {
		Request namedRequest `json:"generateContentRequest"`
	}{namedRequest{"models/" + model, gr}})
	return model, out, err
}

// CountTokensAnswer turns countTokens' answer ({"totalTokens": n, ...})
// into Anthropic's count_tokens answer, {"input_tokens": n}.
func CountTokensAnswer(body []byte) ([]byte, error) {
	var a struct {
		TotalTokens *int64 `json:"totalTokens"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.TotalTokens == nil {
		return nil, fmt.Errorf("reading the countTokens answer: it is not {\"totalTokens\": n}: %.200s", body)
	}
	return json.Marshal(struct {
		InputTokens int64 `json:"input_tokens"`
	}{*a.TotalTokens})
}
