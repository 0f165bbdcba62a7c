package store

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// A prompt and its versions survive a restart; Versions lists one prompt's
// versions oldest first (not those of a prompt whose id it prefixes) and
// DeleteVersions removes only them.
func TestPromptVersionsPersistAndDelete(t *testing.T) {
	st, dir := openTemp(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Prompt{ID: "p1", Slug: "pp-greet-abc123", Name: "greet", WorkspaceID: "w1", Status: StatusActive,
		CreatedAt: now, LastUpdatedAt: now, VersionHeads: VersionHeads{DefaultVersionID: "v1", DefaultVersion: 1, LatestVersionID: "v2", LatestVersion: 2}}
	versions := []PromptVersion{
		{ID: "v1", PromptID: "p1", Version: 1, PromptContent: PromptContent{Template: "Hi {{name}}", Parameters: json.RawMessage(`{"temperature":0.5}`)}},
		{ID: "v2", PromptID: "p1", Version: 2, PromptContent: PromptContent{Template: "Hello {{name}}", Parameters: json.RawMessage(`{}`)}},
		{ID: "v1", PromptID: "p10", Version: 1, PromptContent: PromptContent{Template: "other"}},
	}
	err := st.Update(func(tx Tx) error {
		if err := tx.Put(BucketPrompts, p.ID, p); err != nil {
			return err
		}
		for _, v := range versions {
			if err := tx.Put(BucketPromptVersions, VersionKey(v.PromptID, v.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	numbers := func(prompt string) []int {
		t.Helper()
		var vs []PromptVersion
		if err := st.View(func(tx Tx) (err error) { vs, err = Versions[PromptVersion](tx, BucketPromptVersions, prompt); return }); err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, v := range vs {
			out = append(out, v.Version)
		}
		return out
	}
	var got Prompt
	if err := st.View(func(tx Tx) error { return tx.Get(BucketPrompts, "p1", &got) }); err != nil || got != p {
		t.Fatalf("prompt after reopen: %+v %v", got, err)
	}
	if n := numbers("p1"); !slices.Equal(n, []int{1, 2}) {
		t.Fatalf("versions of p1: %v", n)
	}
	if err := st.Update(func(tx Tx) error { return DeleteVersions(tx, BucketPromptVersions, "p1") }); err != nil {
		t.Fatal(err)
	}
	if a, b := numbers("p1"), numbers("p10"); len(a) != 0 || !slices.Equal(b, []int{1}) {
		t.Fatalf("after delete: p1 %v, p10 %v", a, b)
	}
}
