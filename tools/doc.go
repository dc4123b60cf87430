// Package tools runs the nika: builtins (LANGUAGE.md §7): it validates resolved arguments against
// the catalog's contract and carries out each builtin under the workflow's permits.
//
// The concerns that are not one builtin live in sub-packages: tools/netfloor (the
// permits.net.http gate and the SSRF floor of nika:fetch, nika:notify and vision URLs),
// tools/htmltext (the HTML of a fetched page as Markdown, text, links, metadata, its main
// content, and the text of the elements a CSS selector matches), tools/fsgate (the permits.fs
// gate: paths made absolute, symlinks resolved, globs matched), tools/glob (nika:glob patterns
// and the tree walk nika:grep shares), and tools/mcp (the MCP client and its server registry).
//
// Where LANGUAGE.md is silent, the file of each builtin says what was decided: edit.go (write
// failures, mode), glob.go and tools/glob (the literal root, `**`, exclude pruning, the
// permits.fs.read reach of a root), grep.go (the line limit, binary files, path style, permits)
// and prompt.go (--yes, retries, the end of input, cancellation).
package tools
