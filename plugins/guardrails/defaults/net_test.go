package defaults

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core/netguard"
)

// server is a loopback test server that counts connections and requests.
type server struct {
	*httptest.Server
	conns, reqs atomic.Int64
}

func newServer(t testing.TB, addr string, h http.HandlerFunc) *server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reqs.Add(1)
		h(w, r)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// pngBytes is a 1x1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func imageServer(t *testing.T) *server {
	return newServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngBytes)
		case "/dog.jpg":
			w.Header().Set("Content-Type", "image/jpeg; charset=binary")
			w.Write([]byte("\xff\xd8\xff\xe0 fake jpeg"))
		case "/big.png": // announces its size
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Content-Length", "4096")
			w.Write(make([]byte, 4096))
		case "/chunked.png": // no Content-Length, more than the limit
			w.Header().Set("Content-Type", "image/png")
			for i := 0; i < 8; i++ {
				w.Write(make([]byte, 512))
				w.(http.Flusher).Flush()
			}
		case "/slow.png":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/page.html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html></html>"))
		case "/redirect":
			http.Redirect(w, r, "http://127.0.0.2:1/cat.png", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
}

func imageRequest(urls ...string) string {
	var parts []string
	for _, u := range urls {
		parts = append(parts, `{"type":"image_url","image_url":{"url":`+q(u)+`,"detail":"low"}}`)
	}
	return `{"model":"gpt-4o","messages":[{"role":"system","content":"Describe images."},` +
		`{"role":"user","content":[{"type":"text","text":"What is in these pictures?"},` + strings.Join(parts, ",") + `]}],"max_tokens":300}`
}

func TestInlineImageUrls(t *testing.T) {
	srv := imageServer(t)
	cat := srv.URL + "/cat.png"
	catData := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	dogData := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString([]byte("\xff\xd8\xff\xe0 fake jpeg"))

	t.Run("inlines every form", func(t *testing.T) {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"Compare"},` +
			`{"type":"image_url","image_url":{"url":` + q(cat) + `}},` +
			`{"type":"image_url","image_url":` + q(srv.URL+"/dog.jpg") + `},` +
			`{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGOD"}},` +
			`{"type":"image","source":{"type":"url","url":` + q(cat) + `}}]}],` +
			`"input":[{"role":"user","content":[{"type":"input_image","image_url":` + q(cat) + `}]}]}`
		want := `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"Compare"},` +
			`{"type":"image_url","image_url":{"url":` + q(catData) + `}},` +
			`{"type":"image_url","image_url":` + q(dogData) + `},` +
			`{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGOD"}},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":` + q(base64.StdEncoding.EncodeToString(pngBytes)) + `}}]}],` +
			`"input":[{"role":"user","content":[{"type":"input_image","image_url":` + q(catData) + `}]}]}`
		before0 := srv.reqs.Load()
		res, err := runCheck(t, "default.inlineImageUrls", before(newRequest(body), jparams(t, `{"providers": ["openai", "bedrock"]}`)))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Verdict {
			t.Fatal("verdict false")
		}
		sameJSON(t, res.Transformed, want)
		if n := srv.reqs.Load() - before0; n != 2 {
			t.Errorf("fetched %d times, want 2 (each distinct URL once)", n)
		}
		d := dataOf(t, res)
		if d["inlined"] != 4.0 || d["images"] != 2.0 {
			t.Errorf("data = %v", d)
		}
	})

	t.Run("other provider is left alone", func(t *testing.T) {
		before0 := srv.reqs.Load()
		req := newRequest(imageRequest(cat))
		req.Target.Provider = "anthropic"
		res, err := runCheck(t, "default.inlineImageUrls", before(req, jparams(t, `{"providers": ["bedrock"]}`)))
		if err != nil || !res.Verdict || res.Transformed != nil {
			t.Fatalf("res %+v err %v", res, err)
		}
		if srv.reqs.Load() != before0 {
			t.Error("fetched an image for a provider not listed")
		}
	})

	t.Run("no images", func(t *testing.T) {
		res, err := runCheck(t, "default.inlineImageUrls", before(newRequest(chatBody("hi")), nil))
		if err != nil || !res.Verdict || res.Transformed != nil {
			t.Fatalf("res %+v err %v", res, err)
		}
	})

	t.Run("after the answer", func(t *testing.T) {
		res, err := runCheck(t, "default.inlineImageUrls", after(newRequest(imageRequest(cat)), newResponse(chatAnswer("a cat")), nil))
		if err != nil || !res.Verdict || res.Transformed != nil {
			t.Fatalf("res %+v err %v", res, err)
		}
	})

	// A listener on 127.0.0.2, which the test policy does not trust.
	untrusted := newServer(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBytes)
	})
	errCases := []struct {
		name, url, params, want string
	}{
		{"private address refused", untrusted.URL + "/cat.png", `{}`, "private or reserved address range"},
		{"redirect to a private address refused", srv.URL + "/redirect", `{}`, "private or reserved address range"},
		{"size by Content-Length", srv.URL + "/big.png", `{"maxSizeBytes": 1024}`, "larger than maxSizeBytes (1024)"},
		{"size while reading", srv.URL + "/chunked.png", `{"maxSizeBytes": 1024}`, "larger than maxSizeBytes (1024)"},
		{"timeout", srv.URL + "/slow.png", `{"timeoutMs": 200}`, "timed out"},
		{"not an image", srv.URL + "/page.html", `{}`, `content type "text/html" is not an image`},
		{"status", srv.URL + "/missing.png", `{}`, "status 404"},
		{"scheme", "file:///etc/passwd", `{}`, `URL scheme "file" is not allowed`},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			res, err := runCheck(t, "default.inlineImageUrls", before(newRequest(imageRequest(cat, c.url)), jparams(t, c.params)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want one containing %q (res %+v)", err, c.want, res)
			}
			if !strings.Contains(err.Error(), "could not inline 1 of 2 image(s)") {
				t.Errorf("error = %v", err)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
	if n := untrusted.conns.Load(); n != 0 {
		t.Errorf("the untrusted server accepted %d connections", n)
	}
}

// ---- webhook and log ----

type captured struct {
	header http.Header
	body   map[string]any
}

func webhookServer(t *testing.T, answer func(c captured) (int, string)) (*server, chan captured) {
	ch := make(chan captured, 16)
	s := newServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		c := captured{header: r.Header.Clone(), body: m}
		ch <- c
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		status, out := answer(c)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, out)
	})
	return s, ch
}

func TestWebhook(t *testing.T) {
	srv, got := webhookServer(t, func(c captured) (int, string) {
		req, _ := c.body["request"].(map[string]any)
		text, _ := req["text"].(string)
		switch {
		case strings.Contains(text, "server error"):
			return 500, `{"error":"boom"}`
		case strings.Contains(text, "no verdict"):
			return 200, `{"data":{}}`
		case strings.Contains(text, "transform"):
			return 200, `{"verdict":true,"transformedData":{"request":{"json":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"[redacted]"}]}}}}`
		case strings.Contains(text, "ssn"):
			return 200, `{"verdict":false,"data":{"reason":"pii","entities":["ssn"]}}`
		}
		return 200, `{"verdict":true,"data":{"reason":"clean"}}`
	})
	p := func(path string) map[string]any {
		timeout := "2000"
		if path == "/slow" {
			timeout = "200"
		}
		return jparams(t, `{"webhookURL": `+q(srv.URL+path+"?token=s3cret")+`, "headers": {"X-Api-Key": "key-1"}, "timeout": `+timeout+`}`)
	}

	t.Run("before request: payload and verdict", func(t *testing.T) {
		req := newRequest(chatBody("my ssn is 123-45-6789"))
		req.Header.Set("Authorization", "Bearer caller-secret")
		req.Metadata["team"] = "search"
		res, err := runCheck(t, "default.webhook", before(req, p("/guard")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict || res.Transformed != nil {
			t.Fatalf("res %+v", res)
		}
		c := <-got
		if c.header.Get("X-Api-Key") != "key-1" || c.header.Get("Content-Type") != "application/json" || c.header.Get("Authorization") != "" {
			t.Errorf("headers %v", c.header)
		}
		if c.body["eventType"] != "beforeRequestHook" || c.body["requestType"] != "chatComplete" || c.body["provider"] != "openai" {
			t.Errorf("payload %v", c.body)
		}
		if md, _ := c.body["metadata"].(map[string]any); md["team"] != "search" {
			t.Errorf("metadata %v", c.body["metadata"])
		}
		r, _ := c.body["request"].(map[string]any)
		if j, _ := r["json"].(map[string]any); j["model"] != "gpt-4o-mini" || r["text"] != "my ssn is 123-45-6789" {
			t.Errorf("request %v", r)
		}
		if _, ok := c.body["response"]; ok {
			t.Error("a response was sent before the request")
		}
		d := dataOf(t, res)
		if d["webhookUrl"] != srv.URL+"/guard" {
			t.Errorf("webhookUrl %v (the query must not be shown)", d["webhookUrl"])
		}
		if rd, _ := d["responseData"].(map[string]any); rd["reason"] != "pii" {
			t.Errorf("responseData %v", d["responseData"])
		}
	})

	t.Run("after the answer", func(t *testing.T) {
		res, err := runCheck(t, "default.webhook", after(newRequest(chatBody("hi")), newResponse(chatAnswer("Hello!")), p("/guard")))
		if err != nil || !res.Verdict {
			t.Fatalf("res %+v err %v", res, err)
		}
		c := <-got
		resp, _ := c.body["response"].(map[string]any)
		if c.body["eventType"] != "afterRequestHook" || resp["text"] != "Hello!" || resp["statusCode"] != 200.0 {
			t.Errorf("payload %v", c.body)
		}
	})

	t.Run("transformed request", func(t *testing.T) {
		res, err := runCheck(t, "default.webhook", before(newRequest(chatBody("please transform")), p("/guard")))
		<-got
		if err != nil || !res.Verdict {
			t.Fatalf("res %+v err %v", res, err)
		}
		sameJSON(t, res.Transformed, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"[redacted]"}]}`)
	})

	errCases := []struct{ name, user, path, want string }{
		{"status", "server error", "/guard", "answered status 500"},
		{"no verdict", "no verdict", "/guard", "has no boolean verdict"},
		{"timeout", "hi", "/slow", "timed out"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runCheck(t, "default.webhook", before(newRequest(chatBody(c.user)), p(c.path)))
			<-got
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows the URL's query: %v", err)
			}
		})
	}

	t.Run("private address refused", func(t *testing.T) {
		untrusted := newServer(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"verdict":true}`) })
		_, err := runCheck(t, "default.webhook", before(newRequest(chatBody("hi")),
			jparams(t, `{"webhookURL": `+q(untrusted.URL+"/guard")+`}`)))
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Fatalf("error = %v, want a netguard refusal", err)
		}
		if untrusted.conns.Load() != 0 {
			t.Error("connected to an untrusted address")
		}
	})
}

func TestLog(t *testing.T) {
	srv, got := webhookServer(t, func(c captured) (int, string) {
		if c.header.Get("X-Fail") != "" {
			return 503, ""
		}
		return 202, `{}`
	})
	res, err := runCheck(t, "default.log", after(newRequest(chatBody("hi")), newResponse(chatAnswer("Hello!")),
		jparams(t, `{"logURL": `+q(srv.URL+"/collect")+`, "headers": "{\"X-Source\": \"gateway\"}"}`)))
	if err != nil || !res.Verdict {
		t.Fatalf("res %+v err %v", res, err)
	}
	c := <-got
	if c.header.Get("X-Source") != "gateway" || c.body["eventType"] != "afterRequestHook" {
		t.Errorf("log request %v %v", c.header, c.body)
	}
	_, err = runCheck(t, "default.log", before(newRequest(chatBody("hi")),
		jparams(t, `{"logURL": `+q(srv.URL+"/collect")+`, "headers": {"X-Fail": "1"}}`)))
	<-got
	if err == nil || !strings.Contains(err.Error(), "answered status 503") {
		t.Fatalf("error = %v", err)
	}
}
