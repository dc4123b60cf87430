package server

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nikahq/nika/spec"
)

// The web view's files: templates, one stylesheet, plain scripts. No build step; nothing is
// fetched from anywhere else (the CSP below forbids it).
//
//go:embed ui
var uiFiles embed.FS

// contentSecurityPolicy is every page's policy: only this server's own files, no inline script
// or style (so markup that slipped through escaping still cannot run), no framing, forms only
// to this server.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"since":    sinceText,
	"ms":       msText,
	"clock":    clockText,
	"explain":  explainPath,
	"jsonTree": jsonTree,
	"add":      func(a, b int) int { return a + b },
}).ParseFS(uiFiles, "ui/*.html"))

// staticFiles serves ui/static under /ui/static/.
var staticFiles = func() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui/static")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix("/ui/static/", http.FileServerFS(sub))
}()

// pageData is what every page template gets: the layout reads Title, Nav and Auth, the page its
// own Data.
type pageData struct {
	Title string
	Nav   string // the current section, for aria-current
	Auth  bool   // the server has a token: show sign-out
	Data  any
}

// webRoutes adds the pages to mux (see the package doc, "The web view").
func (s *Server) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.handleRunsPage)
	mux.HandleFunc("GET /ui/runs/stream", s.handleRunsStream)
	mux.HandleFunc("GET /runs/{id}", s.handleRunPage)
	mux.HandleFunc("GET /ui/runs/{id}/stream", s.handleRunStream)
	mux.HandleFunc("GET /ui/runs/{id}/tasks/{task}", s.handleTaskPanel)
	mux.HandleFunc("GET /runs/{id}/trace", s.handleTrace)
	mux.HandleFunc("POST /runs/{id}/cancel", s.handleWebCancel)
	mux.HandleFunc("GET /new", s.handleNewPage)
	mux.HandleFunc("POST /new", s.handleNewSubmit)
	mux.HandleFunc("POST /ui/check", s.handleCheck)
	mux.HandleFunc("GET /explain/{code}", s.handleExplain)
	mux.HandleFunc("GET /signin", s.handleSignInPage)
	mux.HandleFunc("POST /signin", s.handleSignIn)
	mux.HandleFunc("POST /signout", s.handleSignOut)
	mux.Handle("GET /ui/static/", staticFiles)
}

// webPath reports whether a path belongs to the web view (its own authentication and headers)
// rather than to the API.
func webPath(p string) bool {
	if p == "/" || p == "/new" || p == "/signin" || p == "/signout" {
		return true
	}
	for _, pre := range []string{"/runs/", "/ui/", "/explain/"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// openWebPath is what a browser reaches before signing in: the form and the files it uses.
func openWebPath(p string) bool {
	return p == "/signin" || strings.HasPrefix(p, "/ui/static/")
}

// webGate authenticates a web request when the server has a token: a session cookie (or the
// bearer header). A page asked for without one is sent to the sign-in form, anything else is 401.
// Every web answer carries the security headers. It reports whether to go on.
func (s *Server) webGate(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if s.opts.AuthToken == "" || openWebPath(r.URL.Path) || s.signedIn(r) {
		return true
	}
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/ui/") {
		http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return false
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("sign in at /signin first\n"))
	return false
}

// render executes a page template into a buffer first, so a failure is a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	d.Auth = s.opts.AuthToken != ""
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, d); err != nil {
		s.logf("web: page %s: %v", name, err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// webError is a page that says what went wrong.
func (s *Server) webError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", pageData{Title: http.StatusText(status), Data: msg})
}

// handleExplain shows a code's explanation, where a task's error links.
func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	code := strings.ToUpper(r.PathValue("code"))
	text, ok := spec.Explain(code)
	if !ok {
		s.webError(w, r, http.StatusNotFound, "No code "+code+".")
		return
	}
	s.render(w, r, http.StatusOK, "explain", pageData{Title: code, Data: struct{ Code, Text string }{code, text}})
}

// explainPath links a NIKA code to its explanation ("" for anything else).
func explainPath(code string) string {
	if !strings.HasPrefix(code, "NIKA-") {
		return ""
	}
	return "/explain/" + url.PathEscape(code)
}

func sinceText(start, end time.Time) string {
	if start.IsZero() || end.IsZero() {
		return ""
	}
	return msText(float64(end.Sub(start).Microseconds()) / 1000)
}

// msText writes a duration in milliseconds the way a person reads it.
func msText(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d < time.Millisecond:
		return "<1 ms"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func clockText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
