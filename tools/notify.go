package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/canon"
	"github.com/nikahq/nika/tools/netfloor"
)

// nika:notify (LANGUAGE.md §7.5), channel webhook: one POST of the canonical JSON body
// {workflow, task, severity, message, data, timestamp} to `target`, through the same permits
// gate and SSRF floor as nika:fetch (tools/netfloor).
//
// Decisions where the language is silent:
//
//   - workflow and task are null when the engine does not know them (a call outside a run);
//     data is null when absent; timestamp is the engine clock in UTC, RFC 3339 with
//     milliseconds.
//   - Redirects are not followed: a webhook answers where it is, and re-sending a notification
//     somewhere else is not delivering it. A 3xx is a delivery failure like any non-2xx.
//   - NOTIFY-001's details are {status, url, body_excerpt} for a non-2xx answer (as FETCH-001),
//     {url} for a transport failure.

const (
	codeNotify    = spec.CodeBuiltinNotify
	notifyTimeout = 10 * time.Second
	// notifyDrain bounds what is read of a webhook's answer: only its excerpt matters.
	notifyDrain = 64 << 10
)

func runNotify(ctx context.Context, in *invocation) (any, error) {
	channel, err := in.str("channel", "")
	if err != nil {
		return nil, err
	}
	if channel != "webhook" {
		// The schema's enum already refuses the optional channels; this guards a catalog change.
		return nil, in.badValue("channel", channel, "a channel this engine supports (webhook)")
	}
	target, err := in.str("target", "")
	if err != nil {
		return nil, err
	}
	message, err := in.str("message", "")
	if err != nil {
		return nil, err
	}
	severity, err := in.str("severity", "info")
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, in.badValue("target", target, "an absolute http or https URL")
	}
	body, err := canon.Marshal(map[string]any{
		"workflow":  nullable(in.call.Workflow),
		"task":      nullable(in.call.Task),
		"severity":  severity,
		"message":   message,
		"data":      in.args["data"],
		"timestamp": in.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	})
	if err != nil {
		return nil, in.typeError("data", "a JSON value", in.args["data"])
	}

	rctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, in.badValue("target", target, "a URL this engine can request: "+err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	what := "webhook POST " + redactURL(u)
	fail := func(err error) error {
		return requestError(ctx, rctx, err, codeNotify, what, notifyTimeout, map[string]any{"url": redactURL(u)})
	}
	fl := netfloor.New(in.resolver, in.call.Permits)
	if err := fl.Check(rctx, u); err != nil {
		return nil, fail(err)
	}
	client := fl.Client(0)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, notifyDrain))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		head := answer[:min(len(answer), excerptBytes+utf8.UTFMax)]
		e := spec.NewError(codeNotify,
			fmt.Sprintf("%s returned %d; the notification was not delivered", what, resp.StatusCode),
			map[string]any{"status": resp.StatusCode, "url": redactURL(u),
				"body_excerpt": excerpt(decodeBody(head, resp.Header.Get("Content-Type")))})
		e.Transient = transientStatus(resp.StatusCode)
		return nil, e
	}
	return map[string]any{"delivered": true, "status": resp.StatusCode}, nil
}
