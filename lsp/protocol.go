package lsp

import "encoding/json"

// The subset of LSP 3.17 types the server reads and writes. Field names and
// JSON tags follow the specification; only what nika uses is declared.

// Position is zero-based; Character counts UTF-16 code units (the only
// position encoding the server announces).
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

type textDocumentIdentifier struct {
	URI string `json:"uri"`
}

type textDocumentPositionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Position     Position               `json:"position"`
}

type initializeParams struct {
	ProcessID *int   `json:"processId"`
	RootURI   string `json:"rootUri"`
}

type didOpenParams struct {
	TextDocument struct {
		URI        string `json:"uri"`
		LanguageID string `json:"languageId"`
		Version    int32  `json:"version"`
		Text       string `json:"text"`
	} `json:"textDocument"`
}

type didChangeParams struct {
	TextDocument struct {
		URI     string `json:"uri"`
		Version int32  `json:"version"`
	} `json:"textDocument"`
	ContentChanges []contentChange `json:"contentChanges"`
}

// contentChange is a whole new text (Range nil) or an edit of a range.
type contentChange struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

type didCloseParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

// Diagnostic severities.
const (
	severityError   = 1
	severityWarning = 2
)

type Diagnostic struct {
	Range    Range  `json:"range"`
	Severity int    `json:"severity"`
	Code     string `json:"code,omitempty"`
	Source   string `json:"source"`
	Message  string `json:"message"`
	// Data keeps the finding's own fields, so a client (and a test) can
	// read the finding back exactly as `nika check --json` has it.
	Data *diagnosticData `json:"data,omitempty"`
}

// diagnosticData is the finding behind a diagnostic: its 1-based line and
// rune column as `nika check` prints them, its YAML path and its parts.
type diagnosticData struct {
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Path     string `json:"path"`
	Message  string `json:"message"`
	Detail   string `json:"detail"`
	Category string `json:"category"`
	Rule     string `json:"rule,omitempty"`
}

type publishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int32       `json:"version,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

type markupContent struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

type hover struct {
	Contents markupContent `json:"contents"`
	Range    *Range        `json:"range,omitempty"`
}

// Completion item kinds used.
const (
	kindFunction = 3
	kindField    = 5
	kindVariable = 6
	kindModule   = 9
	kindProperty = 10
	kindEnum     = 13
	kindKeyword  = 14
	kindRef      = 18
	kindConstant = 21
)

type textEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

type completionItem struct {
	Label         string         `json:"label"`
	Kind          int            `json:"kind,omitempty"`
	Detail        string         `json:"detail,omitempty"`
	Documentation *markupContent `json:"documentation,omitempty"`
	SortText      string         `json:"sortText,omitempty"`
	FilterText    string         `json:"filterText,omitempty"`
	TextEdit      *textEdit      `json:"textEdit,omitempty"`
}

type completionList struct {
	IsIncomplete bool             `json:"isIncomplete"`
	Items        []completionItem `json:"items"`
}

type referenceParams struct {
	textDocumentPositionParams
	Context struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
}

type codeActionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Range        Range                  `json:"range"`
	Context      struct {
		Diagnostics []json.RawMessage `json:"diagnostics"`
		Only        []string          `json:"only,omitempty"`
	} `json:"context"`
}

type workspaceEdit struct {
	Changes map[string][]textEdit `json:"changes"`
}

type codeAction struct {
	Title       string        `json:"title"`
	Kind        string        `json:"kind"`
	Diagnostics []Diagnostic  `json:"diagnostics,omitempty"`
	IsPreferred bool          `json:"isPreferred,omitempty"`
	Edit        workspaceEdit `json:"edit"`
}
