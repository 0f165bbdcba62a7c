package gemini

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/embedding"
)

// Gemini embeds texts with batchEmbedContents: {"requests": [{"model":
// "models/{model}", "content": {"parts": [{"text": text}]},
// "outputDimensionality": n}...]}, answered with {"embeddings":
// [{"values": [...]}...]} in the same order, and no token counts.

// maxEmbedTexts is the number of requests batchEmbedContents takes in one
// batch.
const maxEmbedTexts = 100

type embedContentRequest struct {
	Model                string  `json:"model"`
	Content              content `json:"content"`
	OutputDimensionality *int    `json:"outputDimensionality,omitempty"`
}

type batchEmbedRequest struct {
	Requests []embedContentRequest `json:"requests"`
}

// translateEmbedRequest turns an OpenAI embeddings body into the model
// name and a batchEmbedContents body: one request per text, dimensions as
// each one's outputDimensionality. A bad model name, token ids, or more
// texts than one batch takes are a 400 naming the field.
func translateEmbedRequest(body []byte) (model string, out []byte, err error) {
	in, texts, err := embedding.Parse(body, Name)
	if err != nil {
		return "", nil, err
	}
	if model, err = modelName(in.Model); err != nil {
		return "", nil, err
	}
	if err := embedding.CheckCount(texts, maxEmbedTexts, model, Name); err != nil {
		return "", nil, err
	}
	req := batchEmbedRequest{Requests: make([]embedContentRequest, len(texts))}
	for i, text := range texts {
		req.Requests[i] = embedContentRequest{Model: "models/" + model, Content: content{Parts: []part{textPart(text)}}, OutputDimensionality: in.Dimensions}
	}
	out, err = json.Marshal(&req)
	return model, out, err
}

// translateEmbedAnswer turns a batchEmbedContents answer into OpenAI's
// embeddings list for the request's model, in its encoding_format; its
// usage is zero (Gemini reports none).
func translateEmbedAnswer(req *core.Request, body []byte) ([]byte, error) {
	var a struct {
		Embeddings []struct {
			Values json.RawMessage `json:"values"`
		} `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("reading the batchEmbedContents answer: %w", err)
	}
	if len(a.Embeddings) == 0 {
		return nil, errors.New("reading the batchEmbedContents answer: it has no embeddings")
	}
	vectors := make([]json.RawMessage, len(a.Embeddings))
	for i, e := range a.Embeddings {
		if len(e.Values) == 0 || string(e.Values) == "null" {
			return nil, fmt.Errorf("reading the batchEmbedContents answer: embedding %d has no values", i)
		}
		vectors[i] = e.Values
	}
	return embedding.Answer(req.Model, req.Body, vectors, 0)
}
