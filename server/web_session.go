package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// sessionCookie is the web view's session cookie; sessionTTL how long a sign-in lasts.
const (
	sessionCookie = "nika_session"
	sessionTTL    = 12 * time.Hour
)

// sessionKey signs session cookies. It is drawn at start-up and never leaves the process: a
// restart signs everyone out, and nothing about the token can be learnt from a cookie.
type sessionKey struct{ key [32]byte }

func (k *sessionKey) init() error {
	_, err := rand.Read(k.key[:])
	return err
}

// mint returns a cookie value that is valid until exp: the expiry and its HMAC-SHA256.
func (k *sessionKey) mint(exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + base64.RawURLEncoding.EncodeToString(k.sign(e))
}

func (k *sessionKey) sign(exp string) []byte {
	m := hmac.New(sha256.New, k.key[:])
	m.Write([]byte("nika-session\x00" + exp))
	return m.Sum(nil)
}

// valid checks a cookie value's signature (in constant time) and expiry.
func (k *sessionKey) valid(v string, now time.Time) bool {
	e, sig, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, k.sign(e)) {
		return false
	}
	unix, err := strconv.ParseInt(e, 10, 64)
	return err == nil && now.Before(time.Unix(unix, 0))
}

// signedIn reports whether a web request carries a valid session cookie, or the bearer token
// (a script may read pages the way it calls the API).
func (s *Server) signedIn(r *http.Request) bool {
	if s.authorized(r) {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && s.session.valid(c.Value, s.opts.Clock())
}

// safeNext keeps a sign-in's return path on this server: a path, never a scheme or a host
// (`//evil.example` and `/\evil.example` are hosts to a browser).
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

// handleSignInPage shows the sign-in form (GET /signin).
func (s *Server) handleSignInPage(w http.ResponseWriter, r *http.Request) {
	s.renderSignIn(w, r, http.StatusOK, "")
}

func (s *Server) renderSignIn(w http.ResponseWriter, r *http.Request, status int, problem string) {
	s.render(w, r, status, "signin", pageData{Title: "Sign in", Nav: "signin", Data: signInData{
		Next: safeNext(r.FormValue("next")), Problem: problem, NoToken: s.opts.AuthToken == "",
	}})
}

type signInData struct {
	Next, Problem string
	NoToken       bool
}

// handleSignIn takes the token from the form (POST /signin) and answers with the session cookie:
// HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), Secure when
// the request came over TLS. The token is compared like the bearer header, in constant time.
func (s *Server) handleSignIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.renderSignIn(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if s.opts.AuthToken == "" {
		http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
		return
	}
	d := digest(strings.TrimSpace(r.PostFormValue("token")))
	if subtle.ConstantTimeCompare(d[:], s.token[:]) != 1 {
		s.logf("web sign-in refused: wrong token")
		s.renderSignIn(w, r, http.StatusUnauthorized, "That is not this server's token.")
		return
	}
	exp := s.opts.Clock().Add(sessionTTL)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.session.mint(exp), Path: "/",
		Expires: exp, MaxAge: int(sessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil})
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// handleSignOut clears the cookie (POST /signout). The cookie is stateless, so this signs out the
// browser, not the session everywhere: a copied cookie lasts until its expiry or a restart.
func (s *Server) handleSignOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
