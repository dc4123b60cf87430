package engine

import (
	"errors"
	iofs "io/fs"

	"github.com/nikahq/nika/tools"
	"github.com/nikahq/nika/tools/mcp"
)

// MCP is the engine's MCP registry as the environment gives it (D7, D25): the file
// NIKA_MCP_CONFIG names, else .nika/mcp_servers.json in the run directory.
type MCP struct {
	Path     string
	Registry *mcp.Registry // nil when there is none or it cannot be used
	// Err says why the registry cannot be used when it was asked for: NIKA_MCP_CONFIG is set, or
	// the file exists, but it cannot be read or parsed. Nil when there is simply no file.
	Err error
}

// LoadMCP reads the MCP registry of runDir ("" : relative to the working directory).
func LoadMCP(runDir string, lookup func(string) (string, bool)) MCP {
	m := MCP{Path: mcp.Path(runDir, lookup)}
	reg, err := mcp.Load(m.Path)
	if err == nil {
		m.Registry = reg
		return m
	}
	if _, named := lookup(mcp.EnvConfig); named || !errors.Is(err, iofs.ErrNotExist) {
		m.Err = err
	}
	return m
}

// Names are the registry's server names, for the checker; nil without a usable registry (then
// unregistered servers are found at run time).
func (m MCP) Names() []string {
	if m.Registry == nil {
		return nil
	}
	return m.Registry.Names()
}

// source is the tool source of one run and what to release when it ends: a client over the
// registry (a server starts on its first use; Close stops every server, process group and all),
// an Unusable source whose mcp: calls say what is wrong with the file, or none.
func (m MCP) source(runDir, version string, lookup func(string) (string, bool)) (tools.Source, func()) {
	switch {
	case m.Registry != nil:
		c := mcp.NewClient(m.Registry, mcp.Options{RunDir: runDir, Getenv: lookup, Version: version})
		return c, func() { c.Close() }
	case m.Err != nil:
		return mcp.Unusable(m.Path, m.Err), func() {}
	}
	return nil, func() {}
}
