package provider

import (
	"strconv"
	"strings"
	"testing"
)

func TestEnvVar(t *testing.T) {
	for _, tt := range []struct{ provider, suffix, want string }{
		{"openai", "API_KEY", "NIKA_OPENAI_API_KEY"},
		{"llamacpp", "MAX_INFLIGHT", "NIKA_LLAMACPP_MAX_INFLIGHT"},
		{"my-llm.v2", "RPM", "NIKA_MY_LLM_V2_RPM"},
		{"Gemini", "TPM", "NIKA_GEMINI_TPM"},
		{"café", "RPM", "NIKA_CAF__RPM"}, // one "_" per character, not per byte
	} {
		if got := EnvVar(tt.provider, tt.suffix); got != tt.want {
			t.Errorf("EnvVar(%q, %q) = %s, want %s", tt.provider, tt.suffix, got, tt.want)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want FrontConfig
		// wantErr are the parts the error must contain; nil is no error.
		wantErr []string
	}{
		{name: "unset is the Front's default", env: nil, want: FrontConfig{}},
		{name: "empty and blank are unset",
			env:  map[string]string{"NIKA_OPENAI_MAX_INFLIGHT": "", "NIKA_OPENAI_RPM": "  ", "NIKA_OPENAI_TPM": "\t"},
			want: FrontConfig{}},
		{name: "all three",
			env:  map[string]string{"NIKA_OPENAI_MAX_INFLIGHT": "256", "NIKA_OPENAI_RPM": "500", "NIKA_OPENAI_TPM": " 200000 "},
			want: FrontConfig{MaxLimit: 256, RPM: 500, TPM: 200000}},
		{name: "the bounds",
			env: map[string]string{"NIKA_OPENAI_MAX_INFLIGHT": strconv.Itoa(MaxInFlightCap), "NIKA_OPENAI_RPM": "1",
				"NIKA_OPENAI_TPM": strconv.Itoa(BudgetCap)},
			want: FrontConfig{MaxLimit: MaxInFlightCap, RPM: 1, TPM: BudgetCap}},
		{name: "another provider's variables are not read",
			env:  map[string]string{"NIKA_GROQ_MAX_INFLIGHT": "3", "OPENAI_MAX_INFLIGHT": "4", "NIKA_OPENAI_RPM": "60"},
			want: FrontConfig{RPM: 60}},
		{name: "not a number",
			env:     map[string]string{"NIKA_OPENAI_MAX_INFLIGHT": "abc"},
			wantErr: []string{"NIKA_OPENAI_MAX_INFLIGHT", `"abc"`, "requests in flight to openai", "1 to 1048576", "unset: 1024"}},
		{name: "zero in flight",
			env:     map[string]string{"NIKA_OPENAI_MAX_INFLIGHT": "0"},
			wantErr: []string{"NIKA_OPENAI_MAX_INFLIGHT", `"0"`}},
		{name: "above the cap",
			env:     map[string]string{"NIKA_OPENAI_MAX_INFLIGHT": strconv.Itoa(MaxInFlightCap + 1)},
			wantErr: []string{"NIKA_OPENAI_MAX_INFLIGHT", strconv.Itoa(MaxInFlightCap + 1)}},
		{name: "negative",
			env:     map[string]string{"NIKA_OPENAI_RPM": "-5"},
			wantErr: []string{"NIKA_OPENAI_RPM", `"-5"`, "requests per minute", "unset: no budget"}},
		{name: "a sign",
			env:     map[string]string{"NIKA_OPENAI_RPM": "+5"},
			wantErr: []string{"NIKA_OPENAI_RPM", `"+5"`}},
		{name: "a fraction",
			env:     map[string]string{"NIKA_OPENAI_TPM": "1.5e6"},
			wantErr: []string{"NIKA_OPENAI_TPM", `"1.5e6"`, "tokens per minute", "whole number"}},
		{name: "overflowing",
			env:     map[string]string{"NIKA_OPENAI_TPM": "99999999999999999999999"},
			wantErr: []string{"NIKA_OPENAI_TPM", "99999999999999999999999"}},
		{name: "a unit",
			env:     map[string]string{"NIKA_OPENAI_TPM": "200k"},
			wantErr: []string{"NIKA_OPENAI_TPM", `"200k"`}},
		{name: "stream off by 0", env: map[string]string{"NIKA_OPENAI_STREAM": "0"}, want: FrontConfig{NoStream: true}},
		{name: "stream off by false", env: map[string]string{"NIKA_OPENAI_STREAM": " False "}, want: FrontConfig{NoStream: true}},
		{name: "stream on by 1", env: map[string]string{"NIKA_OPENAI_STREAM": "1"}, want: FrontConfig{}},
		{name: "stream on by true", env: map[string]string{"NIKA_OPENAI_STREAM": "TRUE"}, want: FrontConfig{}},
		{name: "stream blank is on", env: map[string]string{"NIKA_OPENAI_STREAM": " "}, want: FrontConfig{}},
		{name: "stream with the others",
			env:  map[string]string{"NIKA_OPENAI_STREAM": "false", "NIKA_OPENAI_RPM": "60"},
			want: FrontConfig{RPM: 60, NoStream: true}},
		{name: "another provider's stream is not read",
			env:  map[string]string{"NIKA_GROQ_STREAM": "0", "OPENAI_STREAM": "0"},
			want: FrontConfig{}},
		{name: "stream not a switch",
			env:     map[string]string{"NIKA_OPENAI_STREAM": "off"},
			wantErr: []string{"NIKA_OPENAI_STREAM", `"off"`, "streamed", "1 or true, 0 or false", "unset: 1"}},
		{name: "stream a letter",
			env:     map[string]string{"NIKA_OPENAI_STREAM": "t"},
			wantErr: []string{"NIKA_OPENAI_STREAM", `"t"`}},
		{name: "stream a number other than 0 and 1",
			env:     map[string]string{"NIKA_OPENAI_STREAM": "2", "NIKA_OPENAI_RPM": "60"},
			wantErr: []string{"NIKA_OPENAI_STREAM", `"2"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigFromEnv("openai", func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr == nil {
				if err != nil || got.MaxLimit != tt.want.MaxLimit || got.RPM != tt.want.RPM || got.TPM != tt.want.TPM || got.NoStream != tt.want.NoStream {
					t.Errorf("ConfigFromEnv = %+v, %v; want %+v, no error", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ConfigFromEnv = %+v, no error; want one containing %q", got, tt.wantErr)
			}
			for _, part := range tt.wantErr {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
			if got.MaxLimit != 0 || got.RPM != 0 || got.TPM != 0 || got.NoStream {
				t.Errorf("config %+v with an error, want zero", got)
			}
		})
	}
	if cfg, err := ConfigFromEnv("openai", nil); err != nil || cfg.MaxLimit != 0 {
		t.Errorf("nil lookup: %+v, %v; want the defaults", cfg, err)
	}
}
