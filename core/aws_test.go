package core

import (
	"strings"
	"testing"
)

// TestCheckAWS: regions that can only name an amazonaws.com host, key ids
// fit for the Authorization header, secrets without spaces; messages
// never repeat the value.
func TestCheckAWS(t *testing.T) {
	for _, tc := range []struct {
		field int
		v     string
		ok    bool
	}{
		{AWSRegion, "us-east-1", true},
		{AWSRegion, "us-gov-west-1", true},
		{AWSRegion, "ap-southeast-2", true},
		{AWSRegion, "eu-west", true},
		{AWSRegion, "us", false},
		{AWSRegion, "u-east-1", false},
		{AWSRegion, "us-east-1.evil.com", false},
		{AWSRegion, "us-east-1/x", false},
		{AWSRegion, "us--east", false},
		{AWSRegion, "us-east-", false},
		{AWSRegion, "1s-east-1", false},
		{AWSRegion, "US-EAST-1", false},
		{AWSRegion, strings.Repeat("a", 30) + "-1x", false},
		{AWSAccessKeyID, "AKIAIOSFODNN7EXAMPLE", true},
		{AWSAccessKeyID, "AKIA/2026", false},
		{AWSAccessKeyID, "", false},
		{AWSSecretAccessKey, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", true},
		{AWSSecretAccessKey, "two words", false},
		{AWSSecretAccessKey, strings.Repeat("s", 257), false},
		{AWSSessionToken, strings.Repeat("T", 8192), true},
		{AWSSessionToken, "tok\r\nX-Injected: 1", false},
	} {
		msg := CheckAWS(tc.field, tc.v)
		if (msg == "") != tc.ok || tc.field != AWSRegion && tc.v != "" && strings.Contains(msg, tc.v) {
			t.Errorf("%s %q: %q", AWSFields[tc.field], tc.v, msg)
		}
	}
}

// TestApplyAWS: the region field by field, the credentials whole from one
// source; a managed target refuses every AWS setting.
func TestApplyAWS(t *testing.T) {
	base := Target{Provider: "bedrock", AWS: AWSSettings{Region: "eu-west-1", AccessKeyID: "A", SecretAccessKey: "S", SessionToken: "T"}}
	param := func(f int) string { return "p." + AWSFields[f] }
	for _, tc := range []struct {
		name string
		over AWSSettings
		want AWSSettings
	}{
		{"nothing", AWSSettings{}, base.AWS},
		{"region only", AWSSettings{Region: "us-east-1"}, AWSSettings{Region: "us-east-1", AccessKeyID: "A", SecretAccessKey: "S", SessionToken: "T"}},
		{"key pair replaces the token too", AWSSettings{AccessKeyID: "B", SecretAccessKey: "R"}, AWSSettings{Region: "eu-west-1", AccessKeyID: "B", SecretAccessKey: "R"}},
	} {
		got := base
		if err := got.ApplyAWS(tc.over, param); err != nil || got.AWS != tc.want {
			t.Errorf("%s: %+v %v", tc.name, got.AWS, err)
		}
	}
	managed := base
	managed.Managed = true
	if err := managed.ApplyAWS(AWSSettings{SessionToken: "x"}, param); err == nil || err.Param != "p.aws_session_token" || strings.Contains(err.Message, `"x"`) {
		t.Errorf("managed: %v", err)
	}
	if err := managed.ApplyAWS(AWSSettings{}, param); err != nil {
		t.Errorf("managed, nothing given: %v", err)
	}
}
