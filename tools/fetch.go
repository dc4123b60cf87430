package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html/charset"
	"golang.org/x/net/http/httpguts"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/spec/catalog"
	"github.com/nikahq/nika/spec/jq"
	"github.com/nikahq/nika/tools/htmltext"
	"github.com/nikahq/nika/tools/netfloor"
)

// nika:fetch (LANGUAGE.md §7.5): one HTTP request through the network floor (tools/netfloor),
// its body converted by `mode`.
//
// Decisions where the language is silent:
//
//   - body: a string is sent verbatim and bytes too (both without a default Content-Type);
//     any other value, null included, as canonical JSON with `Content-Type: application/json`
//     unless a Content-Type header is given. A `Host` header sets the request's Host.
//   - User-Agent is `nika` unless a header sets it. Compressed responses are decompressed by the
//     transport; max_bytes caps the decompressed body.
//   - HEAD: a HEAD response has no body, so whatever the mode the output is
//     {url (final), status, content_type, content_length, headers} — headers maps each
//     lower-case header name to its values joined with ", ", content_type and content_length
//     are null when absent — and mode `jq` runs its program over that object.
//   - charset: the Content-Type charset (a WHATWG label) decodes the body; without one, or with
//     an unknown one, the body is UTF-8; a UTF-8 BOM is dropped; invalid sequences become U+FFFD.
//     <meta charset> is not consulted (§7.5: the Content-Type charset, defaulting to UTF-8).
//   - binary: the text modes (markdown, text, links, metadata, article, selector) refuse a binary body with
//     NIKA-BUILTIN-FETCH-003: an image, audio, video or font media type, a known archive or
//     executable type (application/octet-stream, pdf, zip, gzip, …), or a NUL character in the
//     first 8 KiB of the decoded text. Mode jq needs no such rule: such a body is not JSON.
//   - HTML: a body is HTML when its media type is text/html or application/xhtml+xml, or when
//     there is no Content-Type and it sniffs as HTML. links and selector of a non-HTML body are
//     [], and its metadata has null/{} values; markdown, text and article return a non-HTML text
//     body as it is.
//   - article: tools/htmltext.Article — Readability picks the main content, our Markdown rules
//     write it, the title first as a `#` heading; a page with no readable content is "".
//   - selector: tools/htmltext.Select — one string per matching element, its visible text as
//     mode text renders it, in document order. The selector compiles with spec/catalog's
//     ParseSelector, the static check's own parser (a bad literal is NIKA-BUILTIN-001 before the
//     run, a bad resolved one NIKA-INVOKE-002). The texts, counted as their bytes plus one per
//     match, are bounded by max_bytes like the body: past it NIKA-BUILTIN-FETCH-003.
//   - metadata.content_type is the Content-Type header as the server sent it (null if absent).
//   - FETCH-001's body_excerpt is the first KiB of the body, decoded, cut at a character
//     boundary (at most 1024 bytes of UTF-8).

const (
	codeFetchStatus    = spec.CodeBuiltinFetchStatus
	codeFetchTransport = spec.CodeBuiltinFetchTransport
	codeFetchBody      = spec.CodeBuiltinFetchBody

	fetchDefaultTimeout  = 30 * time.Second
	fetchDefaultMaxBytes = 10 << 20
	excerptBytes         = 1024
	binarySniffBytes     = 8 << 10
	userAgent            = "nika"
)

// fetchResponse is a response read in full (up to max_bytes), before the mode converts it.
type fetchResponse struct {
	url         *url.URL // final, after redirects
	status      int
	header      http.Header
	contentType string // the header as sent; "" when absent
	body        []byte
}

// fetchArgs are the arguments of one nika:fetch call, checked.
type fetchArgs struct {
	rawURL, method, mode string
	u                    *url.URL
	timeout              time.Duration
	maxBytes             int64
	prog                 *jq.Program            // mode jq
	sel                  cascadia.SelectorGroup // mode selector
	body                 []byte                 // nil: no body
	contentType          string                 // the Content-Type the body implies; "" for none
}

func runFetch(ctx context.Context, in *invocation) (any, error) {
	a, err := readFetchArgs(in)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, a.method, a.u.String(), bodyReader(a.body))
	if err != nil {
		return nil, in.badValue("url", a.rawURL, "a URL this engine can request: "+err.Error())
	}
	if err := setHeaders(in, req, a.contentType); err != nil {
		return nil, err
	}
	fl := netfloor.New(in.resolver, in.call.Permits)
	what := a.method + " " + redactURL(a.u)
	fail := func(err error) error {
		return requestError(ctx, rctx, err, codeFetchTransport, what, a.timeout, map[string]any{"url": redactURL(a.u)})
	}
	if err := fl.Check(rctx, a.u); err != nil {
		return nil, fail(err)
	}
	client := fl.Client(netfloor.MaxRedirects)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	r := &fetchResponse{url: final, status: resp.StatusCode, header: resp.Header, contentType: resp.Header.Get("Content-Type")}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, excerptBytes+utf8.UTFMax))
		e := spec.NewError(codeFetchStatus,
			fmt.Sprintf("%s %s returned %d", a.method, redactURL(final), resp.StatusCode),
			map[string]any{"status": resp.StatusCode, "url": redactURL(final), "body_excerpt": excerpt(decodeBody(head, r.contentType))})
		e.Transient = transientStatus(resp.StatusCode)
		return nil, e
	}
	if a.method == http.MethodHead {
		out := headOutput(r, resp.ContentLength)
		if a.prog != nil {
			return runFetchJQ(ctx, a.prog, out)
		}
		return out, nil
	}
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, a.maxBytes+1))
	if err != nil {
		return nil, fail(err)
	}
	if int64(len(r.body)) > a.maxBytes {
		return nil, spec.NewError(codeFetchBody,
			fmt.Sprintf("the body of %s %s is larger than max_bytes (%d bytes); raise `max_bytes` or fetch a smaller resource", a.method, redactURL(final), a.maxBytes),
			map[string]any{"url": redactURL(final), "max_bytes": a.maxBytes})
	}
	return fetchOutput(ctx, a, r)
}

// readFetchArgs reads and checks the arguments the schema cannot (the timeout's syntax, the
// URL, the jq program) and builds the request body.
func readFetchArgs(in *invocation) (*fetchArgs, error) {
	a := &fetchArgs{timeout: fetchDefaultTimeout, maxBytes: fetchDefaultMaxBytes}
	var err error
	if a.rawURL, err = in.str("url", ""); err != nil {
		return nil, err
	}
	if a.method, err = in.str("method", http.MethodGet); err != nil {
		return nil, err
	}
	if a.mode, err = in.str("mode", "markdown"); err != nil {
		return nil, err
	}
	switch a.mode {
	case "markdown", "text", "jq", "metadata", "links", "article", "selector":
	default:
		// The schema's enum already refuses the modes this engine lacks; this guards a catalog change.
		return nil, in.badValue("mode", a.mode, "a mode this engine supports (markdown, text, jq, metadata, links, article or selector)")
	}
	if s, err := in.str("timeout", ""); err != nil {
		return nil, err
	} else if s != "" {
		d, perr := time.ParseDuration(s)
		if perr != nil || d <= 0 {
			return nil, in.badValue("timeout", s, "a positive Go duration such as `30s`")
		}
		a.timeout = d
	}
	if v, ok := in.args["max_bytes"]; ok {
		n, ok := v.(int)
		if f, isFloat := v.(float64); isFloat && f == math.Trunc(f) && f >= 1 && f <= 1<<53 {
			n, ok = int(f), true // the schema admits an integral float as an integer
		}
		if !ok || n < 1 {
			return nil, in.typeError("max_bytes", "an integer ≥ 1", v)
		}
		a.maxBytes = int64(n)
	}
	if a.mode == "jq" {
		src, err := in.str("jq", "")
		if err != nil {
			return nil, err
		}
		if a.prog, err = jq.Compile(src); err != nil {
			return nil, spec.NewError(codeJQCompile, err.Error(), map[string]any{"arg": "jq"}).Wrap(err)
		}
	}
	if a.mode == "selector" {
		src, err := in.str("selector", "")
		if err != nil {
			return nil, err
		}
		// The contract check already compiled it with the same parser; this keeps the error if
		// the two ever part.
		if a.sel, err = catalog.ParseSelector(src); err != nil {
			return nil, in.badValue("selector", src, "a valid CSS selector: "+err.Error())
		}
	}
	if a.u, err = url.Parse(a.rawURL); err != nil || a.u.Host == "" {
		return nil, in.badValue("url", a.rawURL, "an absolute http or https URL")
	}
	if a.body, a.contentType, err = requestBody(in); err != nil {
		return nil, err
	}
	return a, nil
}

// fetchOutput converts a 2xx body read in full by the call's mode.
func fetchOutput(ctx context.Context, a *fetchArgs, r *fetchResponse) (any, error) {
	text := decodeBody(r.body, r.contentType)
	if a.mode == "jq" {
		v, err := parseJSON(text)
		if err != nil {
			return nil, spec.NewError(codeFetchBody,
				fmt.Sprintf("the body of %s %s is not JSON (%v); mode `jq` needs a JSON body", a.method, redactURL(r.url), err),
				map[string]any{"url": redactURL(r.url), "content_type": r.contentType}).Wrap(err)
		}
		return runFetchJQ(ctx, a.prog, v)
	}
	if isBinary(r.contentType, text) {
		return nil, spec.NewError(codeFetchBody,
			fmt.Sprintf("the body of %s %s is binary (%s); mode `%s` needs text — fetch it with another tool, or use mode `metadata` on the page that links to it",
				a.method, redactURL(r.url), orUnknown(r.contentType), a.mode),
			map[string]any{"url": redactURL(r.url), "content_type": r.contentType, "mode": a.mode})
	}
	isHTML := htmlBody(r.contentType, r.body)
	switch a.mode {
	case "markdown":
		if !isHTML {
			return text, nil
		}
		return interruptible(ctx, func() any { return htmltext.Markdown(text, r.url) })
	case "text":
		if !isHTML {
			return text, nil
		}
		return htmltext.Text(text), nil
	case "links":
		if !isHTML {
			return []any{}, nil
		}
		return htmltext.Links(text, r.url), nil
	case "article":
		if !isHTML {
			return text, nil
		}
		return interruptible(ctx, func() any { return htmltext.Article(text, r.url) })
	case "selector":
		if !isHTML {
			return []any{}, nil
		}
		return selectOutput(ctx, a, r, text)
	default: // metadata
		m := &htmltext.Meta{OG: map[string]any{}, Twitter: map[string]any{}}
		if isHTML {
			m = htmltext.Metadata(text, r.url)
		}
		return metadataOutput(r, m), nil
	}
}

// selectOutput is mode selector's list: the text of each match, bounded by max_bytes.
// interruptible runs a conversion that cannot stop midway (the Markdown renderer and readability
// take about 0.2 and 0.4 s per MiB, up to the body cap) off the call's goroutine, so that a cancelled
// or timed-out call returns when its context ends rather than when the page is done; the
// conversion then finishes in the background, bounded by the body cap, and its result is dropped.
func interruptible(ctx context.Context, convert func() any) (any, error) {
	done := make(chan any, 1)
	go func() { done <- convert() }()
	select {
	case v := <-done:
		return v, nil
	case <-ctx.Done():
		return nil, cancelError(ctx)
	}
}

func selectOutput(ctx context.Context, a *fetchArgs, r *fetchResponse, text string) (any, error) {
	texts, err := htmltext.Select(ctx, text, a.sel, a.maxBytes)
	switch {
	case errors.Is(err, htmltext.ErrTooLarge):
		return nil, spec.NewError(codeFetchBody,
			fmt.Sprintf("the text matched by `selector` in %s %s is larger than max_bytes (%d bytes); narrow the selector (matches inside matches repeat their text) or raise `max_bytes`",
				a.method, redactURL(r.url), a.maxBytes),
			map[string]any{"url": redactURL(r.url), "max_bytes": a.maxBytes, "selector": a.sel.String()})
	case err != nil:
		return nil, cancelError(ctx)
	}
	out := make([]any, len(texts))
	for i, t := range texts {
		out[i] = t
	}
	return out, nil
}

// requestBody is the request body and the Content-Type it implies ("" for none).
func requestBody(in *invocation) ([]byte, string, error) {
	v, ok := in.args["body"]
	if !ok {
		return nil, "", nil
	}
	switch b := v.(type) {
	case string:
		return []byte(b), "", nil
	case []byte:
		return b, "", nil
	}
	j, err := canon.Marshal(v)
	if err != nil {
		return nil, "", in.typeError("body", "a string, bytes or a JSON value", v)
	}
	return j, "application/json", nil
}

func bodyReader(b []byte) io.Reader {
	if b == nil {
		return nil
	}
	return bytes.NewReader(b)
}

// setHeaders copies the `headers` argument onto req, then the defaults it does not set.
func setHeaders(in *invocation, req *http.Request, contentType string) error {
	if v, ok := in.args["headers"]; ok {
		hs, ok := v.(map[string]any)
		if !ok {
			return in.typeError("headers", "an object of strings", v)
		}
		for _, k := range sortedKeys(hs) {
			s, ok := hs[k].(string)
			if !ok {
				return in.typeError("headers/"+k, "a string", hs[k])
			}
			if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(s) {
				return in.badValue("headers", k+": "+s, "a valid HTTP header (a token name, a value without control characters)")
			}
			if strings.EqualFold(k, "Host") {
				req.Host = s
				continue
			}
			req.Header.Set(k, s)
		}
	}
	if contentType != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", contentType)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	return nil
}

// requestError maps a failed request: the floor's and the permits' own errors pass through, a
// done parent context is a cancellation (or the task's timeout, which the caller finds through
// the wrapped cause), our own deadline and every other failure are the builtin's transient
// transport code.
func requestError(parent, rctx context.Context, err error, code, what string, timeout time.Duration, details map[string]any) error {
	var se *spec.Error
	if errors.As(err, &se) {
		return se
	}
	if parent.Err() != nil {
		return cancelError(parent)
	}
	msg := netfloor.TransportMessage(err)
	if rctx.Err() != nil {
		msg = fmt.Sprintf("timed out after %s", timeout)
	}
	e := spec.NewError(code, fmt.Sprintf("%s failed: %s; check the URL and that the server is reachable", what, msg), details).Wrap(err)
	e.Transient = true
	return e
}

// transientStatus is the transience of a non-2xx status (§7.5): 5xx, 408 and 429.
func transientStatus(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// excerpt cuts text to at most excerptBytes bytes at a character boundary.
func excerpt(text string) string {
	if len(text) <= excerptBytes {
		return text
	}
	cut := excerptBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

func runFetchJQ(ctx context.Context, prog *jq.Program, input any) (any, error) {
	out, err := prog.Run(ctx, input)
	if err != nil {
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, cancelError(ctx)
		}
		return nil, spec.NewError(codeFetchBody, "the `jq` program failed on the body: "+err.Error(), map[string]any{"jq": prog.String()}).Wrap(err)
	}
	if len(out) != 1 {
		return nil, spec.NewError(codeFetchBody,
			fmt.Sprintf("the `jq` program produced %d values; it must produce exactly one (wrap it in [ … ] to collect several)", len(out)),
			map[string]any{"jq": prog.String(), "count": len(out)})
	}
	return out[0], nil
}

// decodeBody decodes body with the Content-Type charset, UTF-8 by default; the result is
// valid UTF-8.
func decodeBody(body []byte, contentType string) string {
	label := ""
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		label = params["charset"]
	}
	if label != "" {
		if enc, name := charset.Lookup(label); enc != nil && name != "utf-8" {
			if out, err := enc.NewDecoder().Bytes(body); err == nil {
				return strings.ToValidUTF8(string(out), "\uFFFD")
			}
		}
	}
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// mediaType is the lower-case media type of a Content-Type, "" when absent or unparsable.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	return mt
}

// binaryTypes are media types whose bodies are never text.
var binaryTypes = map[string]bool{
	"application/octet-stream": true, "application/pdf": true, "application/zip": true,
	"application/gzip": true, "application/x-gzip": true, "application/x-tar": true,
	"application/x-bzip2": true, "application/x-xz": true, "application/zstd": true,
	"application/x-7z-compressed": true, "application/x-rar-compressed": true, "application/vnd.rar": true,
	"application/wasm": true, "application/java-archive": true, "application/x-msdownload": true,
	"application/x-executable": true, "application/protobuf": true, "application/x-protobuf": true,
	"application/msword": true, "application/vnd.ms-excel": true,
}

// isBinary reports whether a body is not text (see the package decisions above).
func isBinary(contentType, text string) bool {
	mt := mediaType(contentType)
	if !strings.HasSuffix(mt, "+xml") && !strings.HasSuffix(mt, "+json") {
		for _, p := range []string{"image/", "audio/", "video/", "font/"} {
			if strings.HasPrefix(mt, p) {
				return true
			}
		}
		if binaryTypes[mt] {
			return true
		}
	}
	head := text
	if len(head) > binarySniffBytes {
		head = head[:binarySniffBytes]
	}
	return strings.IndexByte(head, 0) >= 0
}

// htmlBody reports whether a body is HTML: by its media type, or sniffed when there is none.
func htmlBody(contentType string, body []byte) bool {
	switch mediaType(contentType) {
	case "text/html", "application/xhtml+xml":
		return true
	case "":
		return strings.HasPrefix(http.DetectContentType(body), "text/html")
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return "no Content-Type"
	}
	return s
}

// headOutput is the output of a HEAD request (see the decisions above).
func headOutput(r *fetchResponse, length int64) map[string]any {
	headers := make(map[string]any, len(r.header))
	for k, vs := range r.header {
		headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	var ct, cl any
	if r.contentType != "" {
		ct = r.contentType
	}
	if length >= 0 {
		cl = int(length)
	}
	return map[string]any{"url": redactURL(r.url), "status": r.status, "content_type": ct, "content_length": cl, "headers": headers}
}

// metadataOutput is mode metadata's object (§7.5).
func metadataOutput(r *fetchResponse, m *htmltext.Meta) map[string]any {
	var ct any
	if r.contentType != "" {
		ct = r.contentType
	}
	return map[string]any{
		"url": redactURL(r.url), "status": r.status, "content_type": ct,
		"title": nullable(m.Title), "description": nullable(m.Description),
		"canonical": nullable(m.Canonical), "lang": nullable(m.Lang),
		"og": m.OG, "twitter": m.Twitter,
	}
}

// redactURL renders u without its password, for messages and details.
func redactURL(u *url.URL) string { return u.Redacted() }

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
