package adminsvc

import "testing"

// adminPathCases are paths isAdminPath runs on: data-plane writes (every
// one of them), admin writes, and the data-plane prompt routes under the
// admin prefix /prompts.
var adminPathCases = []struct {
	path  string
	admin bool
}{
	{"/v1/chat/completions", false},
	{"/v1/embeddings", false},
	{"/v1/configs/pc-x", true},
	{"/v1/PROMPTS", true},
	{"/v1/prompts/pp-x", true},
	{"/v1/prompts/pp-x/makeDefault", true},
	{"/v1/prompts/pp-x/versions/v1", true},
	{"/v1/prompts/pp-x/render", false},
	{"/v1/Prompts/pp-x/Completions/", false},
	{"/v1/prompts//render", true},
	{"/v1/prompts/pp-x/render/x", true},
	{"/v1/promptsx/pp-x/render", false},
}

func TestIsAdminPath(t *testing.T) {
	for _, tc := range adminPathCases {
		if got := isAdminPath(tc.path); got != tc.admin {
			t.Errorf("isAdminPath(%q) = %v, want %v", tc.path, got, tc.admin)
		}
		if n := testing.AllocsPerRun(10, func() { isAdminPath(tc.path) }); n != 0 {
			t.Errorf("isAdminPath(%q) allocates %v times", tc.path, n)
		}
	}
}

func BenchmarkIsAdminPath(b *testing.B) {
	for _, path := range []string{"/v1/chat/completions", "/v1/prompts/pp-x/render"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				isAdminPath(path)
			}
		})
	}
}
