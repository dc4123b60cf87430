package lsp

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sync"
	"time"

	"github.com/nikahq/nika/spec"
)

// document is one open text document. Its text is replaced, never edited
// in place, so a snapshot taken for a check stays valid while the client
// goes on typing. Fields are guarded by server.mu; text, version and seq
// are written by the read loop only.
type document struct {
	uri     string
	name    string // the file name findings carry: the URI's path
	version int32
	seq     uint64 // counts the texts the document has had; a check is fresh when its seq is the document's
	text    []byte

	dirty bool      // a check of the current text is wanted
	due   time.Time // not before this time (the debounce)

	current  *snapshot // the analysis of seq, once computed
	lastGood *snapshot // the latest analysis whose text parsed (for completion while the text is broken)
}

// snapshot is one text with everything derived from it. It is immutable once
// built, except for lazily built indexes that only the read loop fills.
type snapshot struct {
	uri      string
	seq      uint64
	version  int32
	text     []byte
	bom      int // 3 when the text starts with a byte-order mark (the checker drops it)
	lines    *lineIndex
	analysis *spec.Analysis

	// Indexes built on first use, by whichever goroutine asks first.
	nodesOnce, diagsOnce, placesOnce sync.Once
	nodes                            map[int]*spec.Node // by checker offset, scalars preferred
	diags                            []Diagnostic       // in the order of analysis.Findings
	places                           []placeholder      // every ${{ }} inside a string scalar
}

func newSnapshot(d *document, opts spec.CheckOptions) *snapshot {
	bom := 0
	if bytes.HasPrefix(d.text, []byte("\xef\xbb\xbf")) {
		bom = 3
	}
	return &snapshot{
		uri: d.uri, seq: d.seq, version: d.version, text: d.text, bom: bom,
		lines:    newLineIndex(d.text),
		analysis: spec.CheckSource(d.name, d.text, opts),
	}
}

func (sn *snapshot) file() *spec.File { return sn.analysis.File }

func (sn *snapshot) parsed() bool { return sn.analysis.File != nil && sn.analysis.File.Root != nil }

// fileName turns a document URI into the name `nika check` would print: the
// path of a file: URI, the URI itself otherwise.
func fileName(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	p := u.Path
	if len(p) > 2 && p[0] == '/' && p[2] == ':' { // file:///C:/… on Windows
		p = p[1:]
	}
	return p
}

func (s *server) didOpen(raw json.RawMessage) (any, *rpcError) {
	var p didOpenParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	td := p.TextDocument
	s.mu.Lock()
	seq := uint64(1)
	if old := s.docs[td.URI]; old != nil { // opened twice: the new text wins
		seq = old.seq + 1
	}
	s.docs[td.URI] = &document{uri: td.URI, name: fileName(td.URI), version: td.Version, seq: seq,
		text: []byte(td.Text), dirty: true, due: time.Now()}
	s.mu.Unlock()
	s.poke()
	return nil, nil
}

func (s *server) didChange(raw json.RawMessage) (any, *rpcError) {
	var p didChangeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	d := s.docs[p.TextDocument.URI]
	if d == nil {
		s.mu.Unlock()
		return nil, nil // a change to a document that is not open: nothing to check
	}
	text := d.text
	for _, c := range p.ContentChanges {
		text = applyChange(text, c)
	}
	d.text = text
	d.version = p.TextDocument.Version
	d.seq++
	d.current = nil
	d.dirty = true
	d.due = time.Now().Add(s.opts.Debounce)
	s.mu.Unlock()
	s.poke()
	return nil, nil
}

// applyChange returns a new text with one change applied; the old text is
// left untouched (snapshots share it).
func applyChange(text []byte, c contentChange) []byte {
	if c.Range == nil {
		return []byte(c.Text)
	}
	x := newLineIndex(text)
	from, to := x.offset(c.Range.Start), x.offset(c.Range.End)
	if to < from {
		from, to = to, from
	}
	out := make([]byte, 0, len(text)-(to-from)+len(c.Text))
	out = append(out, text[:from]...)
	out = append(out, c.Text...)
	return append(out, text[to:]...)
}

func (s *server) didClose(raw json.RawMessage) (any, *rpcError) {
	var p didCloseParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	_, open := s.docs[p.TextDocument.URI]
	delete(s.docs, p.TextDocument.URI)
	s.mu.Unlock()
	if open { // a closed document keeps no diagnostics in the editor
		s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []Diagnostic{}}, nil)
	}
	return nil, nil
}

// poke wakes the check loop without ever blocking.
func (s *server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// snapshotOf returns the analysis of a document's current text, checking it
// now when the check loop has not yet: a request is always answered from
// the text the client has. It runs on the read loop, the only writer of
// document texts, so the text cannot change while it checks. Nil when the
// document is not open.
func (s *server) snapshotOf(uri string) *snapshot {
	s.mu.Lock()
	d := s.docs[uri]
	if d == nil {
		s.mu.Unlock()
		return nil
	}
	if d.current != nil {
		sn := d.current
		s.mu.Unlock()
		return sn
	}
	s.mu.Unlock()
	sn := newSnapshot(d, s.opts.Check)
	s.mu.Lock()
	if s.docs[uri] == d && d.seq == sn.seq {
		d.store(sn)
	}
	s.mu.Unlock()
	return sn
}

// lastGoodOf is the current snapshot when its text parses, else the latest
// one that did: completion works from it while the text is half typed.
func (s *server) lastGoodOf(uri string) (cur, good *snapshot) {
	cur = s.snapshotOf(uri)
	if cur == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.docs[uri]; d != nil && d.lastGood != nil {
		return cur, d.lastGood
	}
	return cur, cur
}

func (d *document) store(sn *snapshot) {
	d.current = sn
	if sn.parsed() {
		d.lastGood = sn
	}
}

// checkLoop checks dirty documents once their debounce has passed and
// publishes their diagnostics. It is the only goroutine that checks in the
// background, so a burst of changes costs one check at a time. A check
// whose document changed while it ran is discarded (the next one is already
// due); spec.CheckSource cannot be interrupted, so superseding is discarding.
func (s *server) checkLoop() {
	defer close(s.loopDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		d, wait := s.nextDue()
		if d != nil {
			s.check(d)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// nextDue picks the dirty document whose debounce passed first, or says how
// long until the earliest one is due (0: nothing to wait for).
func (s *server) nextDue() (*document, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var first *document
	for _, d := range s.docs {
		if d.dirty && (first == nil || d.due.Before(first.due)) {
			first = d
		}
	}
	if first == nil {
		return nil, 0
	}
	if wait := first.due.Sub(now); wait > 0 {
		return nil, wait
	}
	first.dirty = false
	return first, 0
}

// check analyses a document's current text (or reuses the analysis a
// request already made of it) and publishes the diagnostics if the text is
// still current.
func (s *server) check(d *document) {
	s.mu.Lock()
	seq, sn := d.seq, d.current
	frozen := *d // the fields newSnapshot reads, as of seq
	s.mu.Unlock()
	if s.beforeCheck != nil {
		s.beforeCheck(d.uri, seq)
	}
	if sn == nil {
		sn = newSnapshot(&frozen, s.opts.Check)
	}
	diags := sn.diagnostics()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.docs[d.uri] != d || d.seq != seq {
		return // superseded while it ran: never published
	}
	d.store(sn)
	version := sn.version
	s.notify("textDocument/publishDiagnostics",
		publishDiagnosticsParams{URI: d.uri, Version: &version, Diagnostics: diags},
		func() bool { return s.stale(d, seq) })
}

// stale reports whether a document moved past seq (or was closed) after its
// diagnostics were queued; the writer then drops them.
func (s *server) stale(d *document, seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docs[d.uri] != d || d.seq != seq
}
