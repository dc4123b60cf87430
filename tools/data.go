package tools

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/zeebo/blake3"
	"hash"
	"strings"

	"github.com/google/uuid"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/jq"
	"github.com/nikahq/nika/spec/schema"
)

// Data builtins (LANGUAGE.md §7.4): jq, hash, uuid, validate. date and convert have files of
// their own.

const (
	codeJQCompile     = spec.CodeBuiltinJQCompile
	codeJQRun         = spec.CodeBuiltinJQRun
	codeValidateSch   = spec.CodeBuiltinValidateSchema
	codeValidateParse = spec.CodeBuiltinValidateData
)

// runJQ runs a pure jq program (spec/jq: D15) and returns its single value.
func runJQ(ctx context.Context, in *invocation) (any, error) {
	src, err := in.str("expression", "")
	if err != nil {
		return nil, err
	}
	prog, err := jq.Compile(src)
	if err != nil {
		return nil, spec.NewError(codeJQCompile, err.Error(), nil).Wrap(err)
	}
	out, err := prog.Run(ctx, in.args["input"])
	if err != nil {
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, cancelError(ctx)
		}
		return nil, spec.NewError(codeJQRun, "jq: "+err.Error(), nil).Wrap(err)
	}
	if len(out) != 1 {
		return nil, spec.NewError(codeJQRun, fmt.Sprintf("the jq program produced %d values; it must produce exactly one", len(out)),
			map[string]any{"count": len(out)})
	}
	return out[0], nil
}

// runHash digests content: a string as UTF-8, bytes as they are, any other value as canonical
// JSON. BLAKE3 is not in this build (it needs a dependency this build does not carry).
func runHash(_ context.Context, in *invocation) (any, error) {
	algo, err := in.str("algo", "sha256")
	if err != nil {
		return nil, err
	}
	encoding, err := in.str("encoding", "hex")
	if err != nil {
		return nil, err
	}
	var h hash.Hash
	switch algo {
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	case "blake3":
		h = blake3.New() // 32-byte digest (§7.4)
	default:
		return nil, argsError(in.call.Name, []violation{{Path: "/algo", Message: fmt.Sprintf("unknown algo %s; use sha256, sha512 or blake3", algo)}})
	}
	switch c := in.args["content"].(type) {
	case string:
		h.Write([]byte(c))
	case []byte:
		h.Write(c)
	default:
		b, err := canon.Marshal(c)
		if err != nil {
			return nil, in.typeError("content", "a string, bytes or a JSON value", c)
		}
		h.Write(b)
	}
	sum := h.Sum(nil)
	if encoding == "base64" {
		return base64.StdEncoding.EncodeToString(sum), nil
	}
	return hex.EncodeToString(sum), nil
}

// runUUID returns a new lower-case canonical UUID, version 7 (time-ordered) by default or 4.
func runUUID(_ context.Context, in *invocation) (any, error) {
	version, err := in.str("version", "v7")
	if err != nil {
		return nil, err
	}
	var u uuid.UUID
	if version == "v4" {
		u, err = uuid.NewRandom()
	} else {
		u, err = uuid.NewV7()
	}
	if err != nil {
		return nil, spec.NewError(codeFailed, "cannot generate a UUID: "+err.Error(), nil).Wrap(err)
	}
	return strings.ToLower(u.String()), nil
}

// runValidate validates data against a JSON Schema 2020-12 (spec/schema: D16, no loader,
// format not asserted). Output {valid, errors: [{path, message}]}, sorted by path then
// message; invalid data is not an error. With format, a string (or bytes) data is parsed first:
// json as JSON, yaml by the YAML 1.2 core profile of workflow files (D12).
func runValidate(_ context.Context, in *invocation) (any, error) {
	format, err := in.str("format", "")
	if err != nil {
		return nil, err
	}
	data := in.args["data"]
	if format != "" {
		text, isText, err := textOf(data)
		if err != nil {
			return nil, spec.NewError(codeValidateParse, "`data` is not valid "+format+": "+err.Error(), nil)
		}
		if isText {
			if data, err = parseText(format, text); err != nil {
				return nil, spec.NewError(codeValidateParse, "`data` is not valid "+format+": "+err.Error(), nil).Wrap(err)
			}
		}
	}
	doc := in.args["schema"]
	if containsBytes(doc) {
		if doc, err = jsonValue(doc); err != nil {
			return nil, spec.NewError(codeValidateSch, "the schema does not compile: "+err.Error(), nil)
		}
	}
	sch, err := schema.Compile(doc)
	if err != nil {
		return nil, spec.NewError(codeValidateSch, "the schema does not compile: "+err.Error(), nil).Wrap(err)
	}
	vs := sch.Validate(data)
	errs := make([]any, len(vs))
	for i, v := range vs {
		errs[i] = map[string]any{"path": v.Path, "message": v.Message}
	}
	return map[string]any{"valid": len(vs) == 0, "errors": errs}, nil
}

// textOf returns the text of a string, or of bytes holding UTF-8; isText is false for any other
// value.
func textOf(v any) (text string, isText bool, err error) {
	switch x := v.(type) {
	case string:
		return x, true, nil
	case []byte:
		if !utf8Valid(x) {
			return "", true, errors.New("the bytes are not valid UTF-8")
		}
		return string(x), true, nil
	}
	return "", false, nil
}
