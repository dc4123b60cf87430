package router

import "strings"

// WireToolsSelected is the wire kind of the tools_selected loop event.
const WireToolsSelected = "agent_tools_selected"

// ToolsSelected is the tools_selected payload (§8.3, §10.1): offered and
// universe counts and the offered defs split by source.
type ToolsSelected struct {
	Builtin  int `json:"builtin"`
	MCP      int `json:"mcp"`
	Offered  int `json:"offered"`
	Other    int `json:"other"`
	Turn     int `json:"turn"`
	Universe int `json:"universe"`
}

// Tally builds the tools_selected payload for offered names at turn.
func Tally(turn int, offered []string, universe int) ToolsSelected {
	ev := ToolsSelected{Offered: len(offered), Turn: turn, Universe: universe}
	for _, name := range offered {
		switch {
		case strings.HasPrefix(name, "nika:"):
			ev.Builtin++
		case strings.HasPrefix(name, "mcp:"):
			ev.MCP++
		default:
			ev.Other++
		}
	}
	return ev
}
