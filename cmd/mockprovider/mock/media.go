package mock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// ---- rerank ----

type rerankRequest struct {
	Model           string            `json:"model"`
	Query           string            `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments bool              `json:"return_documents"`
}

type rerankResult struct {
	Index          int        `json:"index"`
	RelevanceScore float64    `json:"relevance_score"`
	Document       *rerankDoc `json:"document,omitempty"`
}

type rerankDoc struct {
	Text string `json:"text"`
}

// RerankScore is the mock relevance: the fraction of distinct query words
// that also occur in the document.
func RerankScore(query, doc string) float64 {
	qw := map[string]bool{}
	for _, w := range Words(query) {
		qw[w] = true
	}
	if len(qw) == 0 {
		return 0
	}
	dw := map[string]bool{}
	for _, w := range Words(doc) {
		dw[w] = true
	}
	hit := 0
	for w := range qw {
		if dw[w] {
			hit++
		}
	}
	return float64(hit) / float64(len(qw))
}

func (rq *call) rerank() {
	var req rerankRequest
	if !rq.decode(&req) {
		return
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '{' {
			var d rerankDoc
			if err := json.Unmarshal(raw, &d); err != nil {
				writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid document: "+err.Error())
				return
			}
			docs[i] = d.Text
			continue
		}
		if err := json.Unmarshal(raw, &docs[i]); err != nil {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "documents must be strings or {\"text\":...} objects")
			return
		}
	}
	results := make([]rerankResult, len(docs))
	for i, d := range docs {
		results[i] = rerankResult{Index: i, RelevanceScore: RerankScore(req.Query, d)}
		if req.ReturnDocuments {
			results[i].Document = &rerankDoc{Text: d}
		}
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].RelevanceScore > results[b].RelevanceScore })
	if req.TopN != nil && *req.TopN >= 0 && *req.TopN < len(results) {
		results = results[:*req.TopN]
	}
	out := struct {
		ID      string         `json:"id"`
		Results []rerankResult `json:"results"`
		Meta    any            `json:"meta"`
	}{
		ID:      rq.newID("rerank-mock"),
		Results: results,
		Meta: map[string]any{
			"api_version":  map[string]string{"version": "1"},
			"billed_units": map[string]int{"search_units": 1},
		},
	}
	b, _ := json.Marshal(out)
	rq.writeJSON(b)
}

// ---- images ----

// TinyPNG is the 1x1 PNG returned (base64-encoded) by image generation.
var TinyPNG = func() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0x33, G: 0x99, B: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}()

var tinyPNGBase64 = base64.StdEncoding.EncodeToString(TinyPNG)

// ImageURL is the URL returned by image generation unless b64_json is
// requested.
const ImageURL = "https://example.invalid/image.png"

type imageRequest struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              *int   `json:"n"`
	ResponseFormat string `json:"response_format"`
	Size           string `json:"size"`
}

type imageData struct {
	B64JSON       string `json:"b64_json,omitempty"`
	URL           string `json:"url,omitempty"`
	RevisedPrompt string `json:"revised_prompt"`
}

func (rq *call) images() {
	var req imageRequest
	if !rq.decode(&req) {
		return
	}
	n := 1
	if req.N != nil {
		if *req.N < 1 || *req.N > 10 {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "n must be between 1 and 10")
			return
		}
		n = *req.N
	}
	switch req.ResponseFormat {
	case "", "url", "b64_json":
	default:
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "response_format must be url or b64_json")
		return
	}
	out := struct {
		Created int64       `json:"created"`
		Data    []imageData `json:"data"`
	}{Created: time.Now().Unix()}
	for i := 0; i < n; i++ {
		d := imageData{RevisedPrompt: "mock image of: " + req.Prompt}
		if req.ResponseFormat == "b64_json" {
			d.B64JSON = tinyPNGBase64
		} else {
			d.URL = ImageURL
		}
		out.Data = append(out.Data, d)
	}
	b, _ := json.Marshal(out)
	rq.writeJSON(b)
}

// ---- audio ----

// SpeechAudio is the body returned by POST /v1/audio/speech: one
// 417-byte MPEG-1 Layer III frame (128 kbit/s, 44.1 kHz) with a
// deterministic payload.
var SpeechAudio = func() []byte {
	b := make([]byte, 417)
	copy(b, []byte{0xFF, 0xFB, 0x90, 0x64})
	for i := 4; i < len(b); i++ {
		b[i] = byte(i*31 + 7)
	}
	return b
}()

func (rq *call) speech() {
	var req struct {
		Model string `json:"model"`
		Input string `json:"input"`
		Voice string `json:"voice"`
	}
	if !rq.decode(&req) {
		return
	}
	h := rq.w.Header()
	h.Set("Content-Type", "audio/mpeg")
	h.Set("Content-Length", strconv.Itoa(len(SpeechAudio)))
	if rq.c.breakAfter >= 0 {
		rq.w.WriteHeader(http.StatusOK)
		_, _ = rq.w.Write(SpeechAudio[:len(SpeechAudio)/2])
		_ = http.NewResponseController(rq.w).Flush()
		panic(http.ErrAbortHandler)
	}
	rq.w.WriteHeader(http.StatusOK)
	_, _ = rq.w.Write(SpeechAudio)
}

// transcription serves /v1/audio/transcriptions and /v1/audio/translations.
func (rq *call) transcription(task string) {
	mt, params, err := mime.ParseMediaType(rq.r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "expected a multipart/form-data body")
		return
	}
	mr := multipart.NewReader(bytes.NewReader(rq.body), params["boundary"])
	var (
		haveFile bool
		size     int64
		filename string
		format   string
	)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid multipart body: "+err.Error())
			return
		}
		switch p.FormName() {
		case "file":
			haveFile = true
			filename = p.FileName()
			size, err = io.Copy(io.Discard, p)
		case "response_format":
			var v []byte
			v, err = io.ReadAll(io.LimitReader(p, 1024))
			format = string(v)
		default:
			_, err = io.Copy(io.Discard, p)
		}
		if err != nil {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid multipart body: "+err.Error())
			return
		}
	}
	if !haveFile {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "missing required multipart field: file")
		return
	}
	word := "transcription"
	if task == "translate" {
		word = "translation"
	}
	text := "mock " + word + " of " + strconv.FormatInt(size, 10) + " bytes from " + filename
	switch format {
	case "", "json":
		b, _ := json.Marshal(map[string]string{"text": text})
		rq.writeJSON(b)
	case "text", "srt", "vtt":
		h := rq.w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(text)+1))
		rq.w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(rq.w, text+"\n")
	case "verbose_json":
		b, _ := json.Marshal(map[string]any{
			"task":     task,
			"language": "english",
			"duration": 1.0,
			"text":     text,
			"segments": []any{},
		})
		rq.writeJSON(b)
	default:
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "unsupported response_format "+strconv.Quote(format))
	}
}
