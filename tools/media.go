package tools

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/tools/fsgate"
	"github.com/nikahq/nika/tools/netfloor"
)

// The images of `infer.vision` (LANGUAGE.md §5.1). They are loaded here, not in the verb, because
// they take the very rules of the builtins that read files and URLs:
//
//   - source file: the path resolves against the run directory and, under permits, must be in
//     permits.fs.read, exactly as for nika:read (NIKA-SEC-004 outside it); a missing or unreadable
//     file is NIKA-BUILTIN-READ-001.
//   - source url: a GET through permits.net.http and the SSRF floor, exactly as for nika:fetch
//     (NIKA-SEC-004, NIKA-SEC-005; redirects re-checked, at most 10); a non-2xx answer is
//     NIKA-BUILTIN-FETCH-001 and a transport failure NIKA-BUILTIN-FETCH-002 (transient), with
//     the fetch timeout of 30 s.
//   - the bytes must be a PNG, JPEG, GIF or WebP image, recognised by their content (the
//     extension and a server's Content-Type are not trusted), and at most MaxImageBytes: both are
//     NIKA-VAR-006, a parameter that is invalid once evaluated (D27).

// MaxImageBytes bounds one vision image. The providers refuse larger ones anyway (OpenAI 20 MB
// per image, Gemini 20 MB of inline data per request, Anthropic 5 MB), and a larger one is held in
// memory and sent base64-encoded with every request of the task.
const MaxImageBytes = 20 << 20

const codeVarRuntime = spec.CodeVarRuntime

// Image media types a vision input may have.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// LoadImage loads one vision input: source "file" with ref a path, or source "url" with ref a URL.
// call supplies the permits and the run directory; field names the input in messages
// ("vision[0]"). It returns the image bytes and their media type.
func (b *Builtins) LoadImage(ctx context.Context, call Call, field, source, ref string) ([]byte, string, error) {
	var data []byte
	var what string
	switch source {
	case "file":
		what = quote(ref)
		abs, err := fsgate.Abs(call.RunDir, ref)
		if err != nil {
			return nil, "", spec.NewError(codeReadFile, field+": cannot read "+what+": "+err.Error(), map[string]any{"path": ref}).Wrap(err)
		}
		target, err := fsgate.Check(call.Permits, call.RunDir, fsgate.Read, ref, abs)
		if err != nil {
			return nil, "", inField(field, err)
		}
		if data, err = readRegular(target); err != nil {
			return nil, "", spec.NewError(codeReadFile, field+": cannot read "+what+": "+err.Error(), map[string]any{"path": ref}).Wrap(err)
		}
	case "url":
		var err error
		if data, what, err = b.fetchImage(ctx, call, field, ref); err != nil {
			return nil, "", err
		}
	default:
		return nil, "", spec.NewError(codeVarRuntime, fmt.Sprintf("%s: unknown source %q; use `file` or `url`", field, source), map[string]any{"field": field})
	}
	if len(data) > MaxImageBytes {
		return nil, "", tooLarge(field, what)
	}
	mt := http.DetectContentType(data)
	if !imageTypes[mt] {
		return nil, "", spec.NewError(codeVarRuntime,
			fmt.Sprintf("%s: %s is not a PNG, JPEG, GIF or WebP image (its content reads as %s); convert it to one of those", field, what, mt),
			map[string]any{"field": field, "media_type": mt})
	}
	return data, mt, nil
}

func tooLarge(field, what string) error {
	return spec.NewError(codeVarRuntime,
		fmt.Sprintf("%s: %s is larger than the %d MiB a vision image may have; resize or compress it", field, what, MaxImageBytes>>20),
		map[string]any{"field": field, "max_bytes": MaxImageBytes})
}

// fetchImage GETs a vision URL through the floor (the rules of nika:fetch).
func (b *Builtins) fetchImage(ctx context.Context, call Call, field, raw string) ([]byte, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, "", spec.NewError(codeVarRuntime, fmt.Sprintf("%s: %s is not an absolute http or https URL", field, strconv.Quote(redactString(raw))),
			map[string]any{"field": field})
	}
	what := "GET " + redactURL(u)
	rctx, cancel := context.WithTimeout(ctx, fetchDefaultTimeout)
	defer cancel()
	fail := func(err error) error {
		return requestError(ctx, rctx, err, codeFetchTransport, what, fetchDefaultTimeout, map[string]any{"url": redactURL(u)})
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fail(err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "image/png, image/jpeg, image/gif, image/webp")
	fl := netfloor.New(b.Resolver, call.Permits)
	if err := fl.Check(rctx, u); err != nil {
		return nil, "", inField(field, fail(err))
	}
	client := fl.Client(netfloor.MaxRedirects)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", inField(field, fail(err))
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, excerptBytes+utf8.UTFMax))
		e := spec.NewError(codeFetchStatus,
			fmt.Sprintf("%s: GET %s returned %d", field, redactURL(final), resp.StatusCode),
			map[string]any{"status": resp.StatusCode, "url": redactURL(final), "body_excerpt": excerpt(decodeBody(head, resp.Header.Get("Content-Type")))})
		e.Transient = transientStatus(resp.StatusCode)
		return nil, "", e
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxImageBytes+1))
	if err != nil {
		return nil, "", fail(err)
	}
	return data, redactURL(final), nil
}

// inField names the vision input in the message of a permits, floor or transport error (which
// the shared code words for a builtin call); other errors pass unchanged.
func inField(field string, err error) error {
	se, ok := err.(*spec.Error)
	if !ok || se.Code == codeCancelled {
		return err
	}
	c := *se
	c.Message = field + ": " + se.Message
	return &c
}

// redactString redacts a string that may not parse as a URL.
func redactString(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(invalid URL)"
}
