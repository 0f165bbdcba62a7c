package mock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// textChars counts the characters of a message content that is either a
// JSON string or an array of parts carrying "text" (or "content") fields.
// Other shapes count as zero rather than failing the request.
type textChars int

func (t *textChars) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = textChars(utf8.RuneCountInString(s))
	case '[':
		var parts []struct {
			Text    string    `json:"text"`
			Content textChars `json:"content"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return nil // unknown part shapes: ignore
		}
		n := 0
		for _, p := range parts {
			n += utf8.RuneCountInString(p.Text) + int(p.Content)
		}
		*t = textChars(n)
	}
	return nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Content textChars `json:"content"`
	} `json:"messages"`
	N                   *int           `json:"n"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
}

const systemFingerprint = "fp_mock0001"

// decode parses the JSON body into v, answering 400 on failure.
func (rq *call) decode(v any) bool {
	if len(bytes.TrimSpace(rq.body)) == 0 {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "request body is empty; expected JSON")
		return false
	}
	if err := json.Unmarshal(rq.body, v); err != nil {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

func modelOr(m string) string {
	if m == "" {
		return "mock-model"
	}
	return m
}

func choiceCount(n *int) (int, bool) {
	if n == nil {
		return 1, true
	}
	if *n < 1 || *n > 128 {
		return 0, false
	}
	return *n, true
}

func (rq *call) chatCompletions() {
	var req chatRequest
	if !rq.decode(&req) {
		return
	}
	n, ok := choiceCount(req.N)
	if !ok {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "n must be between 1 and 128")
		return
	}
	chars := 0
	for _, m := range req.Messages {
		chars += int(m.Content)
	}
	promptTokens := estimateTokens(chars)
	maxTok := req.MaxCompletionTokens
	if maxTok == nil {
		maxTok = req.MaxTokens
	}
	rep := replyFor(maxTok)
	model := modelOr(req.Model)
	id := rq.s.nextID()
	created := time.Now().Unix()

	if req.Stream {
		rq.streamChat(rep, model, id, created, n, promptTokens, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}

	bp := getBuf()
	defer putBuf(bp)
	b := (*bp)[:0]
	b = appendID(append(b, `{"id":"`...), "chatcmpl-mock", id)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, model)
	b = append(b, `,"choices":[`...)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, rep.chatTail...)
	}
	b = append(b, `],"usage":`...)
	b = appendChatUsage(b, promptTokens, rep.tokens*n)
	b = append(b, `,"service_tier":"default","system_fingerprint":"`+systemFingerprint+`"}`...)
	*bp = b
	rq.writeJSON(b)
}

func appendChatUsage(b []byte, prompt, completion int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	return append(b, `,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
}

func (rq *call) streamChat(rep *reply, model string, id uint64, created int64, n, promptTokens int, includeUsage bool) {
	var prefix []byte
	prefix = appendID(append(prefix, `data: {"id":"`...), "chatcmpl-mock", id)
	prefix = append(prefix, `","object":"chat.completion.chunk","created":`...)
	prefix = strconv.AppendInt(prefix, created, 10)
	prefix = append(prefix, `,"model":`...)
	prefix = appendJSONString(prefix, model)
	prefix = append(prefix, `,"system_fingerprint":"`+systemFingerprint+`","choices":[`...)
	suffix := "]}\n\n"
	if includeUsage {
		suffix = `],"usage":null}` + "\n\n"
	}
	chunk := func(i int, delta, finish string) []byte {
		b := append([]byte(nil), prefix...)
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"delta":`...)
		b = append(b, delta...)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		b = append(b, finish...)
		b = append(b, '}')
		return append(b, suffix...)
	}

	st := rq.startStream()
	for i := 0; i < n; i++ {
		if !st.send(chunk(i, `{"role":"assistant","content":"","refusal":null}`, "null")) {
			return
		}
	}
	frames := rq.c.frames
	for f := 0; f < frames; f++ {
		delta := appendJSONString([]byte(`{"content":`), rep.piece(f, frames))
		delta = append(delta, '}')
		var ev []byte
		for i := 0; i < n; i++ {
			ev = append(ev, chunk(i, string(delta), "null")...)
		}
		if !st.content(ev) {
			return
		}
	}
	st.checkBreak()
	finish := `"stop"`
	if rep.truncated {
		finish = `"length"`
	}
	for i := 0; i < n; i++ {
		if !st.send(chunk(i, `{}`, finish)) {
			return
		}
	}
	if includeUsage {
		b := append([]byte(nil), prefix...)
		b = append(b, `],"usage":`...)
		b = appendChatUsage(b, promptTokens, rep.tokens*n)
		b = append(b, "}\n\n"...)
		if !st.send(b) {
			return
		}
	}
	st.send(doneEvent)
}

// promptStats parses an OpenAI "prompt"/"input" value: a string, an array
// of strings, an array of token ids or an array of token-id arrays. It
// returns the individual texts (token arrays rendered as "tok<ID>" words)
// and the estimated token count.
func promptStats(raw json.RawMessage) (texts []string, tokens int, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, 0, err
		}
		return []string{s}, estimateTokens(utf8.RuneCountInString(s)), nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, 0, err
	}
	if len(items) > 0 {
		if first := bytes.TrimSpace(items[0]); len(first) > 0 && first[0] != '"' && first[0] != '[' {
			// A single array of token ids.
			var ids []int64
			if err := json.Unmarshal(raw, &ids); err != nil {
				return nil, 0, err
			}
			return []string{tokenText(ids)}, max(len(ids), 1), nil
		}
	}
	for _, it := range items {
		it = bytes.TrimSpace(it)
		if len(it) > 0 && it[0] == '[' {
			var ids []int64
			if err := json.Unmarshal(it, &ids); err != nil {
				return nil, 0, err
			}
			texts = append(texts, tokenText(ids))
			tokens += max(len(ids), 1)
			continue
		}
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			return nil, 0, err
		}
		texts = append(texts, s)
		tokens += estimateTokens(utf8.RuneCountInString(s))
	}
	return texts, tokens, nil
}

func tokenText(ids []int64) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, "tok"...)
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	N             *int            `json:"n"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	MaxTokens     *int            `json:"max_tokens"`
}

func (rq *call) completions() {
	var req completionRequest
	if !rq.decode(&req) {
		return
	}
	n, ok := choiceCount(req.N)
	if !ok {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "n must be between 1 and 128")
		return
	}
	texts, promptTokens, err := promptStats(req.Prompt)
	if err != nil {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid prompt: "+err.Error())
		return
	}
	promptTokens = max(promptTokens, 1)
	choices := n * max(len(texts), 1)
	rep := replyFor(req.MaxTokens)
	model := modelOr(req.Model)
	id := rq.s.nextID()
	created := time.Now().Unix()

	var head []byte
	head = appendID(append(head, `{"id":"`...), "cmpl-mock", id)
	head = append(head, `","object":"text_completion","created":`...)
	head = strconv.AppendInt(head, created, 10)
	head = append(head, `,"model":`...)
	head = appendJSONString(head, model)
	head = append(head, `,"system_fingerprint":"`+systemFingerprint+`","choices":[`...)
	usage := func(b []byte) []byte {
		b = append(b, `{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(promptTokens), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(rep.tokens*choices), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(promptTokens+rep.tokens*choices), 10)
		return append(b, '}')
	}

	if !req.Stream {
		b := append([]byte(nil), head...)
		for i := 0; i < choices; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"text":`...)
			b = append(b, rep.quoted...)
			b = append(b, `,"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, rep.textTail...)
		}
		b = append(b, `],"usage":`...)
		b = usage(b)
		b = append(b, '}')
		rq.writeJSON(b)
		return
	}

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	suffix := "]}\n\n"
	if includeUsage {
		suffix = `],"usage":null}` + "\n\n"
	}
	chunk := func(i int, text, finish string) []byte {
		b := append([]byte("data: "), head...)
		b = append(b, `{"text":`...)
		b = appendJSONString(b, text)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		b = append(b, finish...)
		b = append(b, '}')
		return append(b, suffix...)
	}
	st := rq.startStream()
	frames := rq.c.frames
	for f := 0; f < frames; f++ {
		var ev []byte
		for i := 0; i < choices; i++ {
			ev = append(ev, chunk(i, rep.piece(f, frames), "null")...)
		}
		if !st.content(ev) {
			return
		}
	}
	st.checkBreak()
	finish := `"stop"`
	if rep.truncated {
		finish = `"length"`
	}
	for i := 0; i < choices; i++ {
		if !st.send(chunk(i, "", finish)) {
			return
		}
	}
	if includeUsage {
		b := append([]byte("data: "), head...)
		b = append(b, `],"usage":`...)
		b = usage(b)
		b = append(b, "}\n\n"...)
		if !st.send(b) {
			return
		}
	}
	st.send(doneEvent)
}
