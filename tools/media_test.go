package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/nikahq/nika/spec"
)

var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// LoadImage takes the rules of nika:read and nika:fetch: permits.fs.read for files, the SSRF
// floor and permits.net.http for URLs (redirect hops re-checked); the bytes must sniff as an
// image and fit MaxImageBytes.
func TestLoadImage(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("dot.png", onePixelPNG)
	write("notes.txt", []byte("hello"))
	write("big.png", append(append([]byte{}, onePixelPNG...), make([]byte, MaxImageBytes)...))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/dot.png":
			w.Header().Set("Content-Type", "text/plain") // the server's type is not trusted
			w.Write(onePixelPNG)
		case "/hop":
			http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	b := NewBuiltins()
	local := &spec.Permits{NetHTTP: []string{"127.0.0.1"}, FSRead: []string{"*.png"}}
	for _, tt := range []struct {
		name, source, ref string
		permits           *spec.Permits
		code              string // "" → success
	}{
		{"file", "file", "dot.png", nil, ""},
		{"file under permits", "file", "dot.png", local, ""},
		{"file outside permits.fs.read", "file", "notes.txt", local, "NIKA-SEC-004"},
		{"not an image", "file", "notes.txt", nil, "NIKA-VAR-006"},
		{"too large", "file", "big.png", nil, "NIKA-VAR-006"},
		{"missing", "file", "gone.png", nil, "NIKA-BUILTIN-READ-001"},
		{"url", "url", srv.URL + "/dot.png", local, ""},
		{"url without permits: the floor", "url", srv.URL + "/dot.png", nil, "NIKA-SEC-005"},
		{"url outside permits.net.http", "url", srv.URL + "/dot.png", &spec.Permits{NetHTTP: []string{"example.com"}}, "NIKA-SEC-004"},
		{"redirect hop re-checked", "url", srv.URL + "/hop", local, "NIKA-SEC-004"},
		{"404", "url", srv.URL + "/nothing.png", local, "NIKA-BUILTIN-FETCH-001"},
		{"not a URL", "url", "dot.png", nil, "NIKA-VAR-006"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, mt, err := b.LoadImage(context.Background(), Call{RunDir: dir, Permits: tt.permits}, "vision[3]", tt.source, tt.ref)
			if tt.code == "" {
				if err != nil || mt != "image/png" || len(data) != len(onePixelPNG) {
					t.Fatalf("got %q, %d bytes, %v", mt, len(data), err)
				}
				return
			}
			var se *spec.Error
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Fatalf("error %v, want %s", err, tt.code)
			}
			if len(se.Message) < 10 || se.Message[:10] != "vision[3]:" {
				t.Errorf("message does not name the input: %q", se.Message)
			}
		})
	}
}
