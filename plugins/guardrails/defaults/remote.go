package defaults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/llm-gateway/gateway/hooks"
)

// webhook and log send the check's context to a URL as JSON, in the
// reference's shape:
//
//	{"request":  {"json": <body>, "text": "<text under check>", "isStreamingRequest": false},
//	 "response": {"json": <body>, "text": "...", "statusCode": 200},   // after the answer only
//	 "requestType": "chatComplete", "provider": "openai", "metadata": {...},
//	 "eventType": "beforeRequestHook" | "afterRequestHook"}
//
// Request headers are never sent. eventType uses the reference's name
// afterRequestHook for the after stage, so webhooks written for it work.

const (
	defaultRemoteTimeout = 3000
	maxRemoteTimeout     = 300000
	maxWebhookAnswer     = 10 << 20
)

type remoteRequest struct {
	JSON               json.RawMessage `json:"json"`
	Text               string          `json:"text"`
	IsStreamingRequest bool            `json:"isStreamingRequest"`
}

type remoteResponse struct {
	JSON       json.RawMessage `json:"json"`
	Text       string          `json:"text"`
	StatusCode int             `json:"statusCode"`
}

type remoteContext struct {
	Request     remoteRequest     `json:"request"`
	Response    *remoteResponse   `json:"response,omitempty"`
	RequestType string            `json:"requestType,omitempty"`
	Provider    string            `json:"provider,omitempty"`
	Metadata    map[string]string `json:"metadata"`
	EventType   string            `json:"eventType"`
}

func rawOrNull(b []byte, parsed map[string]any) json.RawMessage {
	if parsed == nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// remotePayload encodes what webhook and log send.
func remotePayload(in *hooks.CheckInput) ([]byte, error) {
	rc := remoteContext{Metadata: map[string]string{}, EventType: string(hooks.BeforeRequest)}
	if r := in.Request; r != nil {
		rc.Request = remoteRequest{JSON: rawOrNull(r.Body, in.RequestJSON()), Text: hooks.RequestText(in.RequestJSON()), IsStreamingRequest: r.Stream}
		rc.RequestType, rc.Provider = string(r.Endpoint), r.Target.Provider
		if r.Metadata != nil {
			rc.Metadata = r.Metadata
		}
	} else {
		rc.Request.JSON = json.RawMessage("null")
	}
	if in.Stage == hooks.AfterResponse {
		rc.EventType = "afterRequestHook"
		rr := &remoteResponse{JSON: json.RawMessage("null")}
		if r := in.Response; r != nil {
			rr.JSON = rawOrNull(r.Body, in.ResponseJSON())
			rr.Text = hooks.ResponseText(in.ResponseJSON())
			rr.StatusCode = r.Status
			if rc.Provider == "" {
				rc.Provider = r.Provider
			}
		}
		rc.Response = rr
	}
	return json.Marshal(rc)
}

type remoteCfg struct {
	url     *url.URL
	headers http.Header
	timeout time.Duration
}

func parseRemote(urlParam string) func(p *params) remoteCfg {
	return func(p *params) remoteCfg {
		return remoteCfg{
			url:     p.urlParam(urlParam),
			headers: p.headersParam("headers"),
			timeout: time.Duration(p.integer("timeout", defaultRemoteTimeout, 1, maxRemoteTimeout)) * time.Millisecond,
		}
	}
}

// post sends the payload and returns the answer; a status other than 2xx
// is an error.
func post(ctx context.Context, what string, c remoteCfg, in *hooks.CheckInput) (*httpResult, error) {
	payload, err := remotePayload(in)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for k, v := range c.headers {
		h[k] = v
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := doRequest(ctx, what, http.MethodPost, c.url, h, payload, maxWebhookAnswer)
	if err != nil {
		return nil, err
	}
	if res.status < 200 || res.status > 299 {
		return nil, statusError(what, c.url, res)
	}
	return res, nil
}

func statusError(what string, u *url.URL, res *httpResult) error {
	body := bytes.TrimSpace(res.body)
	if len(body) > 0 {
		return fmt.Errorf("%s %s answered status %d: %s", what, redactURL(u), res.status, excerpt(string(body), 200))
	}
	return fmt.Errorf("%s %s answered status %d", what, redactURL(u), res.status)
}

// ---- webhook ----

type webhookAnswer struct {
	Verdict         *bool           `json:"verdict"`
	Data            json.RawMessage `json:"data"`
	TransformedData *struct {
		Request *struct {
			JSON json.RawMessage `json:"json"`
		} `json:"request"`
		Response *struct {
			JSON json.RawMessage `json:"json"`
		} `json:"response"`
	} `json:"transformedData"`
}

var webhook = &check[remoteCfg]{
	waits: true, // posts to a URL
	parse: parseRemote("webhookURL"),
	run: func(ctx context.Context, in *hooks.CheckInput, c remoteCfg) (hooks.CheckResult, error) {
		res, err := post(ctx, "webhook", c, in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		var ans webhookAnswer
		if err := json.Unmarshal(res.body, &ans); err != nil {
			return hooks.CheckResult{}, fmt.Errorf("webhook %s: the answer is not a JSON object {verdict, data}: %v", redactURL(c.url), err)
		}
		if ans.Verdict == nil {
			return hooks.CheckResult{}, fmt.Errorf("webhook %s: the answer has no boolean verdict", redactURL(c.url))
		}
		data := map[string]any{"webhookUrl": redactURL(c.url), "verdict": *ans.Verdict}
		if len(ans.Data) > 0 && string(ans.Data) != "null" {
			data["responseData"] = ans.Data
		}
		var transformed []byte
		if td := ans.TransformedData; td != nil {
			side := td.Request
			if in.Stage == hooks.AfterResponse {
				side = td.Response
			}
			if side != nil && len(side.JSON) > 0 && string(side.JSON) != "null" {
				var obj map[string]any
				if json.Unmarshal(side.JSON, &obj) != nil {
					return hooks.CheckResult{}, fmt.Errorf("webhook %s: transformedData must hold a JSON object body", redactURL(c.url))
				}
				transformed = append([]byte(nil), side.JSON...)
				data["transformed"] = true
			}
		}
		if *ans.Verdict {
			data["explanation"] = "The webhook passed the check."
		} else {
			data["explanation"] = "The webhook failed the check."
		}
		return hooks.CheckResult{Verdict: *ans.Verdict, Data: data, Transformed: transformed}, nil
	},
}

// ---- log ----

var logCheck = &check[remoteCfg]{
	waits: true, // posts to a URL
	parse: parseRemote("logURL"),
	run: func(ctx context.Context, in *hooks.CheckInput, c remoteCfg) (hooks.CheckResult, error) {
		if _, err := post(ctx, "log", c, in); err != nil {
			return hooks.CheckResult{}, err
		}
		return hooks.CheckResult{Verdict: true, Data: map[string]any{
			"explanation": "Logged the check context to " + redactURL(c.url) + ".",
		}}, nil
	},
}
