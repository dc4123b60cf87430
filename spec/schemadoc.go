package spec

import (
	"bytes"
	_ "embed"
)

// workflowSchema is the JSON Schema (draft 2020-12) of the workflow format, served by `nika schema`
// and by the `nika_schema` MCP tool. It is an editor aid for yaml-language-server and the like:
// `nika check` stays the authority for every rule a schema cannot express, and the schema must not
// refuse what the checker accepts (schemadoc_literal_test.go holds it to the checker's accepted
// fixtures). Its literal positions (LANGUAGE.md §4.1) go through $defs/literalString, whose
// pattern is expr.ContainsPlaceholder's rule (`\${{` is no placeholder), written in the common
// subset of Go's RE2 (jsonschema/v6) and ECMA-262 (ajv and the editors). It compiles under ajv's
// strict mode (schemadoc_ajv_test.go).
//
//go:embed workflow.schema.json
var workflowSchema []byte

// WorkflowSchema returns the JSON Schema of the workflow format (a copy).
func WorkflowSchema() []byte { return bytes.Clone(workflowSchema) }
