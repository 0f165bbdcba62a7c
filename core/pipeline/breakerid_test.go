package pipeline

import (
	"net/http"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
)

// TestBreakerIdentity checks which targets share a circuit breaker: Azure
// resources, AWS regions or accounts and Vertex projects or regions behind
// one provider do not.
func TestBreakerIdentity(t *testing.T) {
	p, err := New(Options{Client: http.DefaultClient, GuardedClient: http.DefaultClient, Providers: map[string]core.Provider{}})
	if err != nil {
		t.Fatal(err)
	}
	l := &config.Leaf{CircuitBreaker: &config.CircuitBreaker{}}
	azure := func(resource string) core.Target {
		return core.Target{Provider: "azure-openai", APIKey: "k", Azure: core.AzureSettings{ResourceName: resource}}
	}
	aws := func(region, keyID string) core.Target {
		return core.Target{Provider: "bedrock", AWS: core.AWSSettings{Region: region, AccessKeyID: keyID}}
	}
	vertex := func(project, region string) core.Target {
		return core.Target{Provider: "vertex-ai", APIKey: "k", Vertex: core.VertexSettings{ProjectID: project, Region: region}}
	}
	for _, tc := range []struct {
		name string
		a, b core.Target
		same bool
	}{
		{"one Azure resource", azure("r1"), azure("r1"), true},
		{"two Azure resources", azure("r1"), azure("r2"), false},
		{"one AWS region and account", aws("us-east-1", "AKIA1"), aws("us-east-1", "AKIA1"), true},
		{"two AWS regions", aws("us-east-1", "AKIA1"), aws("eu-west-1", "AKIA1"), false},
		{"two AWS accounts", aws("us-east-1", "AKIA1"), aws("us-east-1", "AKIA2"), false},
		{"one Vertex project and region", vertex("proj-1", "us-central1"), vertex("proj-1", "us-central1"), true},
		{"two Vertex projects", vertex("proj-1", "us-central1"), vertex("proj-2", "us-central1"), false},
		{"two Vertex regions", vertex("proj-1", "us-central1"), vertex("proj-1", "global"), false},
		{"two API keys", core.Target{Provider: "openai", APIKey: "a"}, core.Target{Provider: "openai", APIKey: "b"}, false},
	} {
		if same := p.breakerFor(tc.a, l) == p.breakerFor(tc.b, l); same != tc.same {
			t.Errorf("%s: same breaker %v, want %v", tc.name, same, tc.same)
		}
	}
}
