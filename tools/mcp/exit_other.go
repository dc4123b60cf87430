//go:build !linux

package mcp

// onExit does nothing where the server's exit cannot be awaited without reaping it: a server
// whose grandchild holds its stdout is then seen gone only when the grandchild lets go.
func onExit(int, func()) {}
