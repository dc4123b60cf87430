package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// Spill defaults of AGENT.md §1.3 / §4.4.
const (
	DefaultSpillThreshold = 16 << 10
	DefaultSpillHead      = 2 << 10
)

// BlobStore keeps tool results too large to feed back whole (AGENT.md §4.4). Put stores b and
// returns its content address, the lower-case hex SHA-256 of b. It must be safe for concurrent use:
// several agent loops share one store.
type BlobStore interface {
	Put(ctx context.Context, b []byte) (hash string, err error)
}

// DirStore is a BlobStore writing each blob to Dir/<sha256>, atomically and once.
type DirStore struct{ Dir string }

// Put implements BlobStore.
func (s DirStore) Put(_ context.Context, b []byte) (string, error) {
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	target := filepath.Join(s.Dir, hash)
	if _, err := os.Stat(target); err == nil {
		return hash, nil // content-addressed: already there
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return "", fmt.Errorf("blob store: %w", err)
	}
	f, err := os.CreateTemp(s.Dir, ".blob-*")
	if err != nil {
		return "", fmt.Errorf("blob store: %w", err)
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), target)
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("blob store: %w", werr)
	}
	return hash, nil
}

// spill applies §4.4 to one fed-back content in the fold: with a store and a content over the
// threshold, the whole content is stored and the model gets its head and a marker naming the
// blob. A failing Put feeds the full content back. The guard never sees the spilled form.
func (r *run) spill(ctx context.Context, content string) string {
	store := r.v.Blobs
	threshold, head := r.v.Config.SpillThreshold, r.v.Config.SpillHead
	if threshold <= 0 {
		threshold = DefaultSpillThreshold
	}
	if head <= 0 {
		head = DefaultSpillHead
	}
	if store == nil || len(content) <= threshold {
		return content
	}
	hash, err := store.Put(ctx, []byte(content))
	if err != nil {
		return content
	}
	cut := min(head, len(content))
	for cut > 0 && cut < len(content) && !utf8.RuneStart(content[cut]) {
		cut-- // back to a code-point boundary
	}
	return content[:cut] + fmt.Sprintf("\n[… spilled · %d bytes · full output stored as blob %s]", len(content), hash)
}
