// Compiles the workflow JSON Schema with ajv in strict mode and validates instances with it, for
// TestWorkflowSchemaAjvStrict (spec/schemadoc_ajv_test.go).
//
//   node ajv-validate.cjs AJV_DIR SCHEMA.json INPUT.json
//
// AJV_DIR holds node_modules/ajv. INPUT.json is {"cases": [{"name", "data"}, ...], "pattern": P,
// "strings": [...]}. Prints one JSON object: {"draft", "warnings", "compileError"} and, once the
// schema compiled, "results": [{"name", "valid", "errors": [{"instancePath", "keyword",
// "message"}]}] and "matches", where matches[i] tells whether ajv's `pattern` P matches
// strings[i]. Exits 0 whenever it could say so.
"use strict";
const fs = require("fs");
const path = require("path");

// The ajv entry point of each draft a schema may declare.
const drafts = {
  "https://json-schema.org/draft/2020-12/schema": "dist/2020",
  "https://json-schema.org/draft/2019-09/schema": "dist/2019",
  "http://json-schema.org/draft-07/schema#": "dist/ajv",
};

function report(ajvDir, schema, input) {
  const out = { draft: schema.$schema, warnings: [] };
  const entry = drafts[schema.$schema];
  if (!entry) {
    out.compileError = "no ajv entry point for $schema " + JSON.stringify(schema.$schema);
    return out;
  }
  const mod = require(path.join(ajvDir, "node_modules", "ajv", entry));
  const Ajv = mod.default || mod;
  // strict: true turns every strict-mode rule into an error; the logger catches anything ajv
  // would still only log.
  const note = (...args) => out.warnings.push(args.map(String).join(" "));
  const ajv = new Ajv({ strict: true, allErrors: true, logger: { log() {}, warn: note, error: note } });
  let validate;
  try {
    validate = ajv.compile(schema);
  } catch (e) {
    out.compileError = e.message;
    return out;
  }
  out.results = input.cases.map((c) => {
    const valid = validate(c.data);
    const errors = (validate.errors || []).map((e) => ({
      instancePath: e.instancePath,
      keyword: e.keyword,
      message: e.message,
    }));
    return { name: c.name, valid, errors };
  });
  // A `pattern` the way ajv runs it (ECMA-262, with the u flag by default).
  const matches = ajv.compile({ type: "string", pattern: input.pattern });
  out.matches = input.strings.map((s) => matches(s));
  return out;
}

const [ajvDir, schemaFile, inputFile] = process.argv.slice(2);
const out = report(
  ajvDir,
  JSON.parse(fs.readFileSync(schemaFile, "utf8")),
  JSON.parse(fs.readFileSync(inputFile, "utf8")),
);
// No process.exit: it could cut the report short on a pipe.
process.stdout.write(JSON.stringify(out) + "\n");
