package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/nikahq/nika/provider/providertest"
	"github.com/nikahq/nika/verbs/agent/dispatch"
)

// memStore is a BlobStore in memory; fail makes every Put fail.
type memStore struct {
	mu    sync.Mutex
	blobs map[string][]byte
	fail  bool
}

func (m *memStore) Put(_ context.Context, b []byte) (string, error) {
	if m.fail {
		return "", errors.New("store down")
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.blobs == nil {
		m.blobs = map[string][]byte{}
	}
	m.blobs[h] = append([]byte(nil), b...)
	return h, nil
}

// AGENT.md §4.4: with a store, a result over the threshold is stored whole and fed back as its
// head, cut back to a code-point boundary, plus the marker; a small result and a failing store
// feed the full content; without a store nothing spills.
func TestSpillFeedsHeadAndMarker(t *testing.T) {
	// 2 KiB head boundary falls inside a 3-byte rune: "é" is 2 bytes, "€" 3.
	big := strings.Repeat("a", 2047) + strings.Repeat("€", 6000) // 20,047 bytes
	small := "short result"
	for _, tc := range []struct {
		name  string
		store *memStore
		spill bool
	}{
		{"store", &memStore{}, true},
		{"failing store", &memStore{fail: true}, false},
		{"no store", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := providertest.NewScripted(
				providertest.ToolCalls("", providertest.Call{ID: "c-1", Name: "nika:hash", Input: `{"content":"x"}`},
					providertest.Call{ID: "c-2", Name: "nika:hash", Input: `{"content":"y"}`}),
				providertest.Reply("done"),
			)
			v, job, _ := setup(t, p, map[string]any{"prompt": "p", "tools": []any{"nika:hash"}}, 8)
			if tc.store != nil {
				v.Blobs = tc.store
			}
			v.exec = func(_ context.Context, c dispatch.Call) (string, json.RawMessage, error) {
				if c.Index == 0 {
					return big, nil, nil
				}
				return small, nil, nil
			}
			if out := v.Run(context.Background(), job); out.Err != nil {
				t.Fatal(out.Err)
			}
			reqs := p.Requests()
			fed := reqs[1].Messages[2].Blocks
			if fed[1].Content != small {
				t.Errorf("small result fed as %q", fed[1].Content)
			}
			got := fed[0].Content
			if !tc.spill {
				if got != big {
					t.Errorf("fed %d bytes, want the full %d", len(got), len(big))
				}
				return
			}
			sum := sha256.Sum256([]byte(big))
			hash := hex.EncodeToString(sum[:])
			want := strings.Repeat("a", 2047) + fmt.Sprintf("\n[… spilled · %d bytes · full output stored as blob %s]", len(big), hash)
			if got != want {
				t.Errorf("fed back %q…, want %q…", got[:40], want[:40])
			}
			if !utf8.ValidString(got) {
				t.Error("the head was not cut at a code-point boundary")
			}
			if string(tc.store.blobs[hash]) != big {
				t.Error("the store does not hold the whole result")
			}
		})
	}
}

// DirStore writes each blob once under its SHA-256 name.
func TestDirStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "blobs")
	s := DirStore{Dir: dir}
	h1, err := s.Put(context.Background(), []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if h1 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Errorf("hash %s", h1)
	}
	h2, err := s.Put(context.Background(), []byte("hello"))
	if err != nil || h2 != h1 {
		t.Fatalf("second put: %s %v", h2, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, h1))
	if err != nil || string(b) != "hello" {
		t.Fatalf("blob file: %q %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the store, want 1 (no temp file left)", len(entries))
	}
}
