package mock

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// Embed returns the mock embedding of text: a deterministic, L2-normalised
// bag-of-words hashing vector of length dims. Each lower-cased word (runs
// of letters and digits) is hashed with FNV-1a into one of dims buckets
// with a hash-derived sign; the word's character trigrams (with boundary
// padding) are added the same way at a lower weight. Texts sharing most
// words therefore have a high cosine similarity, unrelated texts a low one.
func Embed(text string, dims int) []float32 {
	if dims <= 0 {
		dims = defaultDims
	}
	acc := make([]float64, dims)
	for _, w := range Words(text) {
		if stopWords[w] {
			addFeature(acc, 'w', w, stopWordWeight)
			continue
		}
		addFeature(acc, 'w', w, 1.0)
		padded := []rune(" " + w + " ")
		for i := 0; i+3 <= len(padded); i++ {
			addFeature(acc, 't', string(padded[i:i+3]), trigramWeight)
		}
	}
	var norm float64
	for _, v := range acc {
		norm += v * v
	}
	out := make([]float32, dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, v := range acc {
		out[i] = float32(v / norm)
	}
	return out
}

const (
	trigramWeight  = 0.5
	stopWordWeight = 0.4
)

// stopWords are common English function words; they get a lower weight
// and no trigram features so that texts differing only in such words stay
// near-duplicates and texts sharing only such words stay unrelated.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if of to in on at by for with from as into about
		is are was were be been being am do does did have has had can could will would shall should may might must
		i me my we our you your he him his she her it its they them their this that these those there here
		what which who whom whose when where why how s t d ll m re ve not no so than too very just please`) {
		m[w] = true
	}
	return m
}()

// Words splits text into lower-cased runs of letters and digits.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func addFeature(acc []float64, kind byte, s string, weight float64) {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	h ^= uint64(kind)
	h *= prime64
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime64
	}
	// Mix the high bits in so the bucket and the sign are independent.
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	idx := h % uint64(len(acc))
	if h>>63 == 1 {
		weight = -weight
	}
	acc[idx] += weight
}

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

func (rq *call) embeddings() {
	var req embeddingRequest
	if !rq.decode(&req) {
		return
	}
	texts, tokens, err := promptStats(req.Input)
	if err != nil {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid input: "+err.Error())
		return
	}
	if len(texts) == 0 {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "input must be a non-empty string or array")
		return
	}
	dims := rq.s.opts.EmbeddingDims
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > maxDims {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "dimensions must be between 1 and "+strconv.Itoa(maxDims))
			return
		}
		dims = *req.Dimensions
	}
	var asBase64 bool
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		asBase64 = true
	default:
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "encoding_format must be float or base64")
		return
	}

	b := []byte(`{"object":"list","data":[`)
	raw := make([]byte, 4*dims)
	for i, t := range texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		vec := Embed(t, dims)
		if asBase64 {
			for j, f := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(f))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, f := range vec {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = appendJSONString(b, modelOr(req.Model))
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, "}}"...)
	rq.writeJSON(b)
}
