package mcp

import (
	"context"
	"fmt"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools"
)

// Unusable is the tool source of a run whose registry was asked for but cannot be used: the
// file NIKA_MCP_CONFIG names is missing, or the registry file does not parse. It offers no
// servers, and every mcp: call fails with NIKA-MCP-001, not transient (the cause is "not
// configured"), naming the file and the reason, so the run says what to fix instead of
// claiming there is no registry at all.
func Unusable(path string, err error) tools.Source { return unusable{path: path, err: err} }

type unusable struct {
	path string
	err  error
}

func (u unusable) Servers() []string { return nil }

// Err is tools.Broken: an agent that could use mcp: tools fails its arming with it.
func (u unusable) Err() error { return u.error("") }

func (u unusable) List(context.Context, string) ([]tools.Def, error) { return nil, u.error("") }

func (u unusable) Call(_ context.Context, name string, _ map[string]any) (any, error) {
	return nil, u.error(name)
}

func (u unusable) error(tool string) *spec.Error {
	d := map[string]any{"registry": u.path, "detail": u.err.Error()}
	if tool != "" {
		d["tool"] = tool
	}
	return spec.NewError(CodeUnavailable, fmt.Sprintf("the MCP registry %s cannot be used: %v; fix the file (or NIKA_MCP_CONFIG)", u.path, u.err), d).Wrap(u.err)
}
