package vertex

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/gemini"
	"github.com/llm-gateway/gateway/plugins/providers/internal/embedding"
)

// Vertex AI serves Google's text embedding models (text-embedding-*,
// text-multilingual-embedding-*, gemini-embedding-*, textembedding-gecko*)
// through the predict method: {"instances": [{"content": text}...],
// "parameters": {"outputDimensionality": n}}, answered with each
// instance's embeddings.values and statistics.token_count.

// Instances per predict call: gemini-embedding-* take one text, the
// text-embedding models up to 250.
const (
	maxEmbedTexts       = 250
	maxGeminiEmbedTexts = 1
)

// googleEmbeddingModels are the name prefixes of Google's text embedding
// models on Vertex AI (publisher google): text-embedding-005,
// text-multilingual-embedding-002, gemini-embedding-001 and the older
// textembedding-gecko@003. Other publishers' models, and Google's
// multimodalembedding (whose instances are of another shape), are not
// translated.
var googleEmbeddingModels = []string{"text-embedding-", "text-multilingual-embedding-", "gemini-embedding-", "textembedding-gecko"}

// isEmbeddingModel reports whether model is a Google text embedding model
// the provider translates.
func isEmbeddingModel(model string) bool {
	for _, prefix := range googleEmbeddingModels {
		if strings.HasPrefix(model, prefix) {
			return true
		}
	}
	return false
}

type predictInstance struct {
	Content string `json:"content"`
}

type predictParameters struct {
	OutputDimensionality *int `json:"outputDimensionality,omitempty"`
}

type predictRequest struct {
	Instances  []predictInstance  `json:"instances"`
	Parameters *predictParameters `json:"parameters,omitempty"`
}

// translateEmbedRequest turns an OpenAI embeddings body into the model and
// its predict body. A model that is not a Google text embedding model, or
// an input the model cannot take, is a 400 naming the field.
func translateEmbedRequest(body []byte) (model string, out []byte, err error) {
	in, texts, err := embedding.Parse(body, Name)
	if err != nil {
		return "", nil, err
	}
	if !isEmbeddingModel(in.Model) {
		return "", nil, core.BadRequest("model", "model %q: provider %s translates embeddings for Google's text embedding models (publisher google: text-embedding-*, text-multilingual-embedding-*, gemini-embedding-*, textembedding-gecko*), not other publishers' or multimodal ones", in.Model, Name)
	}
	if err := checkModel(in.Model); err != nil {
		return "", nil, err
	}
	most := maxEmbedTexts
	if strings.HasPrefix(in.Model, "gemini-embedding") {
		most = maxGeminiEmbedTexts
	}
	if err := embedding.CheckCount(texts, most, in.Model, Name); err != nil {
		return "", nil, err
	}
	req := predictRequest{Instances: make([]predictInstance, len(texts))}
	for i, t := range texts {
		req.Instances[i].Content = t
	}
	if in.Dimensions != nil {
		req.Parameters = &predictParameters{OutputDimensionality: in.Dimensions}
	}
	out, err = json.Marshal(req)
	return in.Model, out, err
}

// translateEmbedAnswer turns a predict answer into OpenAI's embeddings
// list for the request's model, its usage the instances' token counts.
func translateEmbedAnswer(req *core.Request, body []byte) ([]byte, error) {
	var a struct {
		Predictions []struct {
			Embeddings struct {
				Values     json.RawMessage `json:"values"`
				Statistics struct {
					TokenCount float64 `json:"token_count"`
				} `json:"statistics"`
			} `json:"embeddings"`
		} `json:"predictions"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("reading the predict answer: %w", err)
	}
	if len(a.Predictions) == 0 {
		return nil, errors.New("reading the predict answer: it has no predictions")
	}
	vectors := make([]json.RawMessage, len(a.Predictions))
	tokens := 0
	for i, p := range a.Predictions {
		if len(p.Embeddings.Values) == 0 {
			return nil, fmt.Errorf("reading the predict answer: prediction %d has no embeddings.values", i)
		}
		vectors[i] = p.Embeddings.Values
		tokens += int(p.Embeddings.Statistics.TokenCount)
	}
	return embedding.Answer(req.Model, req.Body, vectors, tokens)
}

// translateEmbedResponse turns a predict answer into OpenAI's embeddings
// list, and Google's error body into the gateway's.
func translateEmbedResponse(req *core.Request, resp *core.Response) error {
	return gemini.TranslateBody(resp, func(body []byte) ([]byte, error) { return translateEmbedAnswer(req, body) })
}
