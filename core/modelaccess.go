package core

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// ModelAccess is which models the requests through a managed provider may
// name, as its integration's model list sets them (PUT
// /v1/integrations/{slug}/models): a model listed with enabled false is
// refused; with OnlyEnabled (allow_all_models: false) so is every model
// not listed as enabled. A target without rules carries a nil
// *ModelAccess, which allows everything.
type ModelAccess struct {
	// Via ("provider @openai-prod") and Integration (its slug) are what
	// refusals name.
	Via, Integration string
	// OnlyEnabled refuses the models not listed as enabled.
	OnlyEnabled bool
	// enabled holds every listed model: true when enabled.
	enabled map[string]bool
}

// NewModelAccess is the rules of integration for the requests through
// via: models maps each listed slug to its enabled flag. It is nil when
// they allow every model.
func NewModelAccess(via, integration string, onlyEnabled bool, models map[string]bool) *ModelAccess {
	if !onlyEnabled {
		restricts := false
		for _, on := range models {
			restricts = restricts || !on
		}
		if !restricts {
			return nil
		}
	}
	return &ModelAccess{Via: via, Integration: integration, OnlyEnabled: onlyEnabled, enabled: models}
}

// Allows reports whether model may be named.
func (a *ModelAccess) Allows(model string) bool {
	if a == nil {
		return true
	}
	on, listed := a.enabled[model]
	return on || !listed && !a.OnlyEnabled
}

// Check refuses req, as sent to a target with these rules, when the model
// it names is not allowed, with a 403 whose param is "model". A unified
// route's request without a model sent to an Azure OpenAI deployment
// (Target.PicksModel) names the deployment's model name (azure_model_name)
// when it is given. A request whose model the gateway reads nowhere is
// refused under OnlyEnabled only, where allowing it would let any model
// through: a unified route's body without a model (to a deployment whose
// model name is not given, too), or a POST or PUT the generic proxy
// forwards unread. GET and DELETE through the proxy (listing models,
// reading files and batches) and reading a stored response's input items
// name no model and pass.
func (a *ModelAccess) Check(req *Request) *Error {
	if a == nil {
		return nil
	}
	model := req.Model
	if model == "" {
		var err *Error
		if model, err = MultipartModel(req); err != nil {
			return err
		}
	}
	deployment := model == "" && req.Endpoint != EndpointProxy && req.Target.PicksModel()
	if deployment {
		model = req.Target.Azure.ModelName
	}
	if model != "" {
		if a.Allows(model) {
			return nil
		}
		why := "it is disabled on integration " + a.Integration
		if _, listed := a.enabled[model]; !listed {
			why = "integration " + a.Integration + " only serves the models enabled on it (allow_all_models is false)"
		}
		return modelRefusal("model %s cannot be used through %s: %s", model, a.Via, why)
	}
	if !a.OnlyEnabled {
		return nil
	}
	switch {
	case req.Endpoint == EndpointResponseItems:
		return nil
	case req.Endpoint == EndpointProxy:
		if req.Method == http.MethodGet || req.Method == http.MethodDelete || req.Method == http.MethodHead {
			return nil
		}
		return modelRefusal("%s only serves the models enabled on integration %s (allow_all_models is false), and the gateway does not read which model a %s to /v1%s through the generic proxy uses: such requests are refused for it", a.Via, a.Integration, req.Method, req.Path)
	}
	if deployment {
		return modelRefusal("model is required: %s only serves the models enabled on integration %s (allow_all_models is false), and which model the Azure deployment serves is not known: name it in the body's model or in %s", a.Via, a.Integration, AzureHeaders[AzureModelName])
	}
	return modelRefusal("model is required: %s only serves the models enabled on integration %s (allow_all_models is false)", a.Via, a.Integration)
}

// modelRefusal is a 403 naming the model.
func modelRefusal(format string, args ...any) *Error {
	e := Forbidden(format, args...)
	e.Param = "model"
	return e
}

// isMultipart reports whether req's body is multipart/form-data.
func isMultipart(req *Request) bool {
	return strings.HasPrefix(strings.ToLower(req.Header.Get("Content-Type")), "multipart/form-data")
}

// MultipartModel is the "model" field of a multipart/form-data body
// (image edits, transcriptions, translations; "" for another body), or ""
// when it has none or cannot be read to its end. A form with more than
// one model field is a 400 naming model, as a query parameter given twice
// is: the gateway would check one, and servers differ on which they take
// (Starlette's, vLLM's, takes the last).
func MultipartModel(req *Request) (string, *Error) {
	if !isMultipart(req) {
		return "", nil
	}
	_, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return "", nil
	}
	r := multipart.NewReader(bytes.NewReader(req.Body), params["boundary"])
	model, fields := "", 0
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			return model, nil
		}
		if err != nil {
			return "", nil
		}
		if part.FormName() != "model" {
			continue
		}
		if fields++; fields > 1 {
			return "", BadRequest("model", "model is given more than once; give it once (the form has more than one model field)")
		}
		if part.FileName() == "" {
			v, err := io.ReadAll(io.LimitReader(part, 1024))
			if err != nil {
				return "", nil
			}
			model = strings.TrimSpace(string(v))
		}
	}
}

// MaxModelList bounds a model list read whole to be filtered.
const MaxModelList = 8 << 20

// FiltersList reports whether req lists the provider's models (GET
// /v1/models through the proxy) on a target with rules, whose answer
// FilterList then trims.
func (a *ModelAccess) FiltersList(req *Request) bool {
	return a != nil && req.Endpoint == EndpointProxy && req.Method == http.MethodGet && strings.TrimSuffix(req.Path, "/") == "/models"
}

// FilterList leaves out of an OpenAI-shaped model list ({"data": [{"id":
// ...}, ...], ...}) the models the rules refuse; the other members are
// kept as sent. A body of another shape is answered unchanged.
func (a *ModelAccess) FilterList(body []byte) []byte {
	var list map[string]json.RawMessage
	var data []json.RawMessage
	if json.Unmarshal(body, &list) != nil || json.Unmarshal(list["data"], &data) != nil || data == nil {
		return body
	}
	kept := data[:0]
	for _, raw := range data {
		var m struct {
			ID *string `json:"id"`
		}
		if json.Unmarshal(raw, &m) != nil || m.ID == nil {
			return body
		}
		if a.Allows(*m.ID) {
			kept = append(kept, raw)
		}
	}
	var err error
	if list["data"], err = json.Marshal(kept); err != nil {
		return body
	}
	out, err := json.Marshal(list)
	if err != nil {
		return body
	}
	return out
}
