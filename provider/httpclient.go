package provider

import (
	"net"
	"net/http"
	"time"
)

// NewHTTPClient returns the HTTP client of one provider whose Front admits at most maxInFlight
// requests at once (FrontConfig.MaxLimit; 0 or less is DefaultMaxLimit). Its transport is a clone of
// http.DefaultTransport (proxy from the environment, the same dial and TLS timeouts) that keeps up
// to maxInFlight idle connections per host, so a limiter at its ceiling reuses connections instead
// of opening one per request (Go's default keeps 2), and it speaks HTTP/2 where the server offers it
// over TLS, even when a caller sets its own TLSClientConfig. The client has no Timeout: each
// request's deadline comes from its context. The transport is an *http.Transport; a caller may
// adjust it before the first request.
func NewHTTPClient(maxInFlight int) *http.Client {
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxLimit
	}
	t := baseTransport()
	t.MaxIdleConnsPerHost = maxInFlight
	if t.MaxIdleConns != 0 && t.MaxIdleConns < maxInFlight { // 0 is no limit
		t.MaxIdleConns = maxInFlight
	}
	t.ForceAttemptHTTP2 = true
	return &http.Client{Transport: t}
}

// baseTransport is a clone of http.DefaultTransport, or, should a program have replaced it with a
// RoundTripper of another type, a transport with the same settings as Go's default.
func baseTransport() *http.Transport {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return t.Clone()
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
