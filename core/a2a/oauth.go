package a2a

import (
	"encoding/json"
	"maps"
	"slices"
)

// CardOAuth is the OAuth 2.0 an agent card declares: its authorization
// server's metadata URL (an oauth2 scheme's oauth2MetadataUrl, or an
// openIdConnect scheme's openIdConnectUrl), or else the endpoints of its
// authorization code flow; and the scopes to ask for.
type CardOAuth struct {
	MetadataURL      string
	AuthorizationURL string
	TokenURL         string
	Scopes           []string
}

// securityScheme is one entry of a card's securitySchemes: protocol 0.3
// names the kind in "type"; 1.0 wraps the scheme in a member named for its
// kind.
type securityScheme struct {
	Type             string          `json:"type"`
	Flows            *oauthFlows     `json:"flows"`
	MetadataURL      string          `json:"oauth2MetadataUrl"`
	OpenIDConnectURL string          `json:"openIdConnectUrl"`
	OAuth2           *securityScheme `json:"oauth2SecurityScheme"`
	OpenIDConnect    *securityScheme `json:"openIdConnectSecurityScheme"`
}

type oauthFlows struct {
	AuthorizationCode *struct {
		AuthorizationURL string            `json:"authorizationUrl"`
		TokenURL         string            `json:"tokenUrl"`
		Scopes           map[string]string `json:"scopes"`
	} `json:"authorizationCode"`
}

// OAuthFromCard reads the OAuth 2.0 the card raw declares: of its
// securitySchemes, those its security requirements name come first (in
// the order named, with the scopes they require), then the others by
// name (with every scope their flow lists). ok is false when none is an
// OpenID Connect scheme or an OAuth 2.0 one with metadata or an
// authorization code flow.
func OAuthFromCard(raw []byte) (o CardOAuth, ok bool) {
	var card struct {
		Schemes  map[string]securityScheme `json:"securitySchemes"`
		Security json.RawMessage           `json:"security"`
		// Protocol 1.0's name for security.
		Requirements json.RawMessage `json:"securityRequirements"`
	}
	if json.Unmarshal(raw, &card) != nil {
		return o, false
	}
	required, order := requiredScopes(card.Security)
	if order == nil {
		required, order = requiredScopes(card.Requirements)
	}
	for _, name := range slices.Sorted(maps.Keys(card.Schemes)) {
		if _, ok := required[name]; !ok {
			order = append(order, name)
		}
	}
	for _, name := range order {
		s, ok := card.Schemes[name]
		if !ok {
			continue
		}
		switch {
		case s.OAuth2 != nil:
			s = *s.OAuth2
			s.Type = "oauth2"
		case s.OpenIDConnect != nil:
			s = *s.OpenIDConnect
			s.Type = "openIdConnect"
		}
		scopes, named := required[name]
		switch {
		case s.Type == "openIdConnect" && s.OpenIDConnectURL != "":
			o = CardOAuth{MetadataURL: s.OpenIDConnectURL}
		case s.Type != "oauth2":
			continue
		case s.MetadataURL != "":
			o = CardOAuth{MetadataURL: s.MetadataURL}
		case s.Flows != nil && s.Flows.AuthorizationCode != nil && s.Flows.AuthorizationCode.AuthorizationURL != "" && s.Flows.AuthorizationCode.TokenURL != "":
			ac := s.Flows.AuthorizationCode
			o = CardOAuth{AuthorizationURL: ac.AuthorizationURL, TokenURL: ac.TokenURL}
			if !named {
				scopes = slices.Sorted(maps.Keys(ac.Scopes))
			}
		default:
			continue
		}
		o.Scopes = scopes
		return o, true
	}
	return CardOAuth{}, false
}

// requiredScopes reads security requirements, a list of {scheme: [scopes]}
// (protocol 0.3) or of {schemes: {scheme: {list: [scopes]}}} (1.0): the
// scopes of each scheme named, and the schemes in the order first named
// (nil when there are none).
func requiredScopes(raw json.RawMessage) (map[string][]string, []string) {
	var list []map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil, nil
	}
	scopes := map[string][]string{}
	var order []string
	add := func(name string, s []string) {
		if _, ok := scopes[name]; !ok {
			scopes[name] = s
			order = append(order, name)
		}
	}
	for _, req := range list {
		if wrapped, ok := req["schemes"]; ok && len(req) == 1 {
			var schemes map[string]struct {
				List []string `json:"list"`
			}
			if json.Unmarshal(wrapped, &schemes) == nil {
				for _, name := range slices.Sorted(maps.Keys(schemes)) {
					add(name, schemes[name].List)
				}
				continue
			}
		}
		for _, name := range slices.Sorted(maps.Keys(req)) {
			var s []string
			if json.Unmarshal(req[name], &s) == nil {
				add(name, s)
			}
		}
	}
	return scopes, order
}
