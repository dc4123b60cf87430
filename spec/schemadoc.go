package spec

import (
	"bytes"
	_ "embed"
)

// workflowSchema is the JSON Schema (draft 2020-12) of the workflow format, served by `nika schema`
// and by the `nika_schema` MCP tool. It is an editor aid for yaml-language-server and the like:
// `nika check` stays the authority for every rule a schema cannot express.
//
//go:embed workflow.schema.json
var workflowSchema []byte

// WorkflowSchema returns the JSON Schema of the workflow format (a copy).
func WorkflowSchema() []byte { return bytes.Clone(workflowSchema) }
