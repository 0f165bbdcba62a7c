package defaults

import (
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

// goodParams is a valid parameter set of every check.
var goodParams = map[string]string{
	"default.regexMatch":               `{"rule": "^hello", "not": false}`,
	"default.regexReplace":             `{"rules": [{"pattern": "\\d+", "replacement": "#"}], "failOnDetection": false}`,
	"default.sentenceCount":            `{"minSentences": 1, "maxSentences": 10, "not": false}`,
	"default.wordCount":                `{"minWords": 1, "maxWords": 500}`,
	"default.characterCount":           `{"minCharacters": 1, "maxCharacters": 4000}`,
	"default.jsonSchema":               `{"schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}}`,
	"default.jsonKeys":                 `{"keys": ["a", "b"], "operator": "all"}`,
	"default.contains":                 `{"words": ["a"], "operator": "none"}`,
	"default.validUrls":                `{"onlyDNS": true, "not": false}`,
	"default.containsCode":             `{"format": "C#"}`,
	"default.alluppercase":             `{"not": true}`,
	"default.alllowercase":             `{}`,
	"default.endsWith":                 `{"suffix": "."}`,
	"default.notNull":                  `{"not": false}`,
	"default.modelWhitelist":           `{"models": ["gpt-4o"], "not": true}`,
	"default.modelRules":               `{"rules": {"defaults": ["gpt-4o-mini"], "metadata": {"tier": {"pro": ["gpt-4o"]}}}, "not": false}`,
	"default.allowedRequestTypes":      `{"allowedTypes": ["chatComplete", "stream-chatComplete"], "blockedTypes": "embed"}`,
	"default.requiredMetadataKeys":     `{"metadataKeys": ["_user"], "operator": "any"}`,
	"default.requiredMetadataKeyPairs": `{"metadataPairs": {"env": "prod"}, "operator": "all"}`,
	"default.inlineImageUrls":          `{"providers": ["bedrock"], "maxSizeBytes": 1048576, "timeoutMs": 5000, "failOnError": true}`,
	"default.requestParamsCheck":       `{"tools": {"blockedTypes": ["web_search"]}, "params": {"values": {"n": {"allowedValues": [1]}}}}`,
	"default.jwt":                      `{"jwksUri": "https://login.example.com/.well-known/jwks.json", "issuer": "https://login.example.com/", "audience": ["api"], "maxTokenAge": "12h"}`,
	"default.webhook":                  `{"webhookURL": "https://hooks.example.com/guard?token=abc", "headers": {"X-Api-Key": "k"}, "timeout": 5000}`,
	"default.log":                      `{"logURL": "https://logs.example.com/in", "headers": "{\"Authorization\": \"Bearer x\"}"}`,
	"default.addPrefix":                `{"prefix": "Be kind. ", "applyToRole": "system", "addToExisting": true, "onlyIfEmpty": false}`,
}

// withNot are the checks that take the common not parameter.
var withNot = []string{"default.regexMatch", "default.sentenceCount", "default.wordCount", "default.characterCount",
	"default.jsonSchema", "default.validUrls", "default.containsCode", "default.alluppercase", "default.alllowercase",
	"default.endsWith", "default.notNull", "default.modelWhitelist", "default.modelRules"}

func validate(t *testing.T, id, p string) []string {
	t.Helper()
	v, ok := lookup(t, id).(hooks.ParamsValidator)
	if !ok {
		t.Fatalf("%s has no ValidateParams", id)
	}
	return v.ValidateParams(jparams(t, p))
}

func TestGoodParams(t *testing.T) {
	for _, id := range IDs() {
		p, ok := goodParams[id]
		if !ok {
			t.Errorf("no good parameters listed for %s", id)
			continue
		}
		if probs := validate(t, id, p); len(probs) > 0 {
			t.Errorf("%s %s: unexpected problems %q", id, p, probs)
		}
	}
}

// TestCommonParams: every check accepts failOnError (a boolean) and
// refuses unknown parameters; not is accepted exactly where it applies.
func TestCommonParams(t *testing.T) {
	for _, id := range IDs() {
		good := jparams(t, goodParams[id])
		if good == nil {
			good = map[string]any{}
		}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for kk, vv := range good {
				m[kk] = vv
			}
			m[k] = v
			return m
		}
		v := lookup(t, id).(hooks.ParamsValidator)
		if probs := v.ValidateParams(with("failOnError", true)); len(probs) > 0 {
			t.Errorf("%s: failOnError refused: %q", id, probs)
		}
		if probs := v.ValidateParams(with("failOnError", "yes")); !slices.Contains(probs, "failOnError: must be true or false") {
			t.Errorf("%s: failOnError \"yes\" gave %q", id, probs)
		}
		probs := v.ValidateParams(with("colour", "blue"))
		if len(probs) != 1 || !strings.HasPrefix(probs[0], "colour: unknown parameter (known: ") {
			t.Errorf("%s: unknown parameter gave %q", id, probs)
		}
		probs = v.ValidateParams(with("not", true))
		if slices.Contains(withNot, id) != (len(probs) == 0) {
			t.Errorf("%s: not gave %q", id, probs)
		}
		if slices.Contains(withNot, id) {
			if probs := v.ValidateParams(with("not", "true")); !slices.Contains(probs, "not: must be true or false") {
				t.Errorf("%s: not \"true\" gave %q", id, probs)
			}
		}
	}
}

func TestParamProblems(t *testing.T) {
	cases := []struct {
		id, params string
		want       []string
	}{
		{"default.regexMatch", `{}`, []string{"rule: is required: a regular expression (RE2 syntax); pattern is accepted as an alias"}},
		{"default.regexMatch", `{"rule": "a(b"}`, []string{"rule: not a valid regular expression (RE2 syntax): error parsing regexp: missing closing ): `a(b`"}},
		{"default.regexMatch", `{"rule": "a", "pattern": "b"}`, []string{"pattern: give the regular expression as rule or as pattern, not both"}},
		{"default.regexMatch", `{"pattern": 5}`, []string{"pattern: must be a non-empty string holding a regular expression"}},
		{"default.regexReplace", `{"rules": [{"pattern": "x", "replacement": 1}, {"rule": "("}, "y", {"pattern": "z", "colour": 1}]}`, []string{
			"rules[0].replacement: must be a string",
			"rules[1].rule: not a valid regular expression (RE2 syntax): error parsing regexp: missing closing ): `(`",
			`rules[2]: must be an object {"pattern": "...", "replacement": "..."}`,
			"rules[3].colour: unknown parameter (known: pattern, redactText, replacement, rule)",
		}},
		{"default.regexReplace", `{"rules": [], "pattern": "x"}`, []string{"rules: give either rules or a single rule/pattern with replacement, not both"}},
		{"default.regexReplace", `{"rules": [{"pattern": "x"}], "replacement": "y"}`, []string{"replacement: with rules, give each rule its own replacement"}},
		{"default.regexReplace", `{"pattern": "x", "failOnDetection": "no"}`, []string{"failOnDetection: must be true or false"}},
		{"default.sentenceCount", `{"minSentences": 5, "maxSentences": 2}`, []string{"maxSentences: must not be less than minSentences (5)"}},
		{"default.sentenceCount", `{"minSentences": -1}`, []string{"minSentences: must be between 0 and 1099511627776, not -1"}},
		{"default.wordCount", `{"minWords": 1.5, "maxWords": "10"}`, []string{"minWords: must be a whole number", "maxWords: must be a whole number"}},
		{"default.characterCount", `{"maxCharacters": 2.0}`, nil},
		{"default.jsonSchema", `{}`, []string{"schema: is required: a JSON Schema object"}},
		{"default.jsonSchema", `{"schema": [1]}`, []string{"schema: must be a JSON Schema object"}},
		{"default.jsonSchema", `{"schema": "{nope"}`, []string{"schema: must be a JSON Schema object (a string holding one is not valid JSON)"}},
		{"default.jsonSchema", `{"schema": {"type": "strin", "properties": {"age": {"minimum": "0"}, "name": {"pattern": "("}}, "required": "name", "anyOf": []}}`, []string{
			`schema.type: unknown type "strin" (want null, boolean, object, array, number, integer or string)`,
			"schema.properties.age.minimum: must be a number",
			"schema.properties.name.pattern: not a valid regular expression (RE2 syntax): error parsing regexp: missing closing ): `(`",
			"schema.required: must be an array of property names",
			"schema.anyOf: must be a non-empty array of schemas",
		}},
		{"default.jsonSchema", `{"schema": {"$ref": "#/$defs/missing"}}`, []string{`schema.$ref: reference "#/$defs/missing" points to nothing in the schema`}},
		{"default.jsonSchema", `{"schema": {"$ref": "https://example.com/s.json"}}`, []string{`schema.$ref: only references inside the schema ("#" or "#/...") are supported, not "https://example.com/s.json"`}},
		{"default.jsonKeys", `{"keys": [], "operator": "some"}`, []string{"keys: must not be empty", "operator: must be one of any, all, none"}},
		{"default.jsonKeys", `{"keys": ["a", ""]}`, []string{"keys[1]: must be a non-empty string"}},
		{"default.contains", `{"words": "refund"}`, []string{"words: must be an array of strings"}},
		{"default.contains", `{}`, []string{"words: is required: a non-empty array of strings"}},
		{"default.validUrls", `{"onlyDNS": "yes"}`, []string{"onlyDNS: must be true or false"}},
		{"default.containsCode", `{"format": "COBOL"}`, []string{"format: must be one of SQL, Python, TypeScript, JavaScript, Java, C#, C++, C, Ruby, PHP, Swift, Kotlin, Go, Rust, Scala, R, Perl, Shell, HTML, CSS, XML, JSON, YAML, Markdown, Dockerfile"}},
		{"default.containsCode", `{"format": "python"}`, nil},
		{"default.endsWith", `{"suffix": ""}`, []string{"suffix: must not be empty"}},
		{"default.endsWith", `{}`, []string{"suffix: is required: a non-empty string"}},
		{"default.modelWhitelist", `{"models": [1]}`, []string{"models[0]: must be a non-empty string"}},
		{"default.modelRules", `{}`, []string{`rules: is required: {"defaults": [...], "metadata": {"<key>": {"<value>": [models]}}} or [{"metadata": {...}, "models": [...]}]`}},
		{"default.modelRules", `{"rules": {"defaults": "gpt-4o", "metadata": {"tier": ["gpt-4o"]}, "other": 1}}`, []string{
			"rules.other: unknown field (want defaults and metadata)",
			"rules.defaults: must be an array of strings",
			`rules.metadata.tier: must be an object {"<value>": [models]}`,
		}},
		{"default.modelRules", `{"rules": [{"metadata": {"tier": 1}, "models": []}, {"models": ["a"]}]}`, []string{
			"rules[0].metadata.tier: must be a string (metadata values are strings)",
			"rules[0].models: must not be empty",
			"rules[1].metadata: is required: a non-empty object of metadata keys and string values",
		}},
		{"default.modelRules", `{"rules": {"defaults": ["a"]}, "defaultModels": ["b"]}`, []string{"defaultModels: give the default models as rules.defaults or defaultModels, not both"}},
		{"default.modelRules", `{"rules": {}}`, []string{"rules: names no models: give metadata rules or default models"}},
		{"default.allowedRequestTypes", `{"allowedTypes": ["chatComplete"], "blockedTypes": ["chatComplete"]}`, []string{`blockedTypes: "chatComplete" is both allowed and blocked`}},
		{"default.requiredMetadataKeys", `{"metadataKeys": ["a"], "operator": "ALL"}`, []string{"operator: must be one of all, any, none"}},
		{"default.requiredMetadataKeyPairs", `{"metadataPairs": {}}`, []string{"metadataPairs: must name at least one key and value"}},
		{"default.requiredMetadataKeyPairs", `{"metadataPairs": {"tier": 2, "env": "prod"}}`, []string{"metadataPairs.tier: must be a string (metadata values are strings)"}},
		{"default.requiredMetadataKeyPairs", `{"metadataPairs": ["env"]}`, []string{"metadataPairs: must be an object"}},
		{"default.inlineImageUrls", `{"maxSizeBytes": 0, "timeoutMs": 1.5, "providers": "openai"}`, []string{
			"providers: must be an array of strings",
			"maxSizeBytes: must be between 1 and 104857600, not 0",
			"timeoutMs: must be a whole number",
		}},
		{"default.inlineImageUrls", `{}`, nil},
		{"default.requestParamsCheck", `{}`, []string{"tools: give tools or params rules (or both)"}},
		{"default.requestParamsCheck", `{"tools": {"blockedTypes": "web_search", "allowedNames": []}, "params": {"values": {"n": {"allowedValues": [1], "blockedValues": [1.0]}, "seed": {}, "top_p": 1}}}`, []string{
			"tools.allowedNames: unknown field (known: blockedTypes, allowedTypes, blockedFunctionNames, allowedFunctionNames)",
			"tools.blockedTypes: must be an array of strings",
			"params.values.n: 1 is both allowed and blocked",
			"params.values.seed: give blockedValues or allowedValues",
			"params.values.top_p: must be an object with blockedValues and/or allowedValues",
		}},
		{"default.jwt", `{}`, []string{"jwksUri: is required (or jwks, an inline JSON Web Key Set)"}},
		{"default.jwt", `{"jwksUri": "ftp://x/jwks", "maxTokenAge": "forever", "clockTolerance": -1, "algorithms": ["HS256"]}`, []string{
			"clockTolerance: must be between 0 and 3600, not -1",
			`maxTokenAge: must be a duration such as "1d", "12h", "30m", "45s", a number of seconds, or 0 to not check it`,
			`algorithms: unknown algorithm "HS256" (supported: RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA)`,
			`jwksUri: URL scheme "ftp" is not allowed; use http or https`,
		}},
		{"default.jwt", `{"jwksUri": "https://a/jwks", "jwks": {"keys": []}}`, []string{"jwks: give jwksUri or jwks, not both"}},
		{"default.jwt", `{"jwks": {"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}, {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}}`, []string{
			"jwks.keys[0]: RSA key of 17 bits is too small (at least 2048)",
			"jwks.keys[1]: EC key needs base64url x and y of 32 bytes",
		}},
		{"default.jwt", `{"jwks": {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}}`, []string{"jwks: has no RSA, EC or Ed25519 public key"}},
		{"default.jwt", `{"jwks": {"keys": []}, "headerKey": "Bad Header"}`, []string{"headerKey: must be a header name", "jwks: has no RSA, EC or Ed25519 public key"}},
		{"default.webhook", `{"webhookURL": "https://user:pw@hooks.example.com/x", "headers": {"Host": "evil", "X-Ok": 1}, "timeout": 0}`, []string{
			"webhookURL: URL must not contain user information (user:password@)",
			"headers.Host: cannot be set",
			"headers.X-Ok: must be a string",
			"timeout: must be between 1 and 300000, not 0",
		}},
		{"default.webhook", `{}`, []string{"webhookURL: is required: a non-empty string"}},
		{"default.log", `{"logURL": "not a url", "headers": "[1]"}`, []string{
			"logURL: URL must be absolute, e.g. https://host/path",
			"headers: must be an object of header names and string values (or a string holding one as JSON)",
		}},
		{"default.addPrefix", `{"prefix": "", "applyToRole": "tool", "addToExisting": 1}`, []string{
			"prefix: must not be empty",
			"applyToRole: must be one of user, system, assistant, developer",
			"addToExisting: must be true or false",
		}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			got := validate(t, c.id, c.params)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s\n got: %q\nwant: %q", c.params, got, c.want)
			}
			if len(c.want) > 0 {
				// The same parameters at run time are a check error.
				_, err := runCheck(t, c.id, before(newRequest(chatBody("hi")), jparams(t, c.params)))
				if err == nil || !strings.Contains(err.Error(), "invalid parameters: "+c.want[0]) {
					t.Errorf("Run error = %v", err)
				}
			}
		})
	}
}
