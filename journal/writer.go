package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"sync"
	"time"
)

// SyncInterval is the least time between two fsyncs of a journal (group commit): the records
// that arrive meanwhile are written at once (a killed process loses none of them) and synced
// together, so a run costs about one fsync per SyncInterval of its length, not one per record.
const SyncInterval = 10 * time.Millisecond

// WriteInterval is the least time between two writes when nobody waits for one (Flush,
// AppendWritten, Close): records that arrive meanwhile go out together, so that a wide run does
// not cost a write call per record, and none waits longer than this to reach the file.
const WriteInterval = time.Millisecond

// Writer appends chained records to a journal file (doc.go), from any goroutine. Append hands a
// record to the writer's goroutine and returns; the goroutine writes what has accumulated in one
// write, computing the chain in order, and fsyncs at most once per SyncInterval. After a write
// fails nothing more is written: the file is cut back to its whole lines and Close reports it.
type Writer struct {
	path string
	f    *os.File

	mu      sync.Mutex
	pending [][]byte // record bodies, in Append order
	flushes []chan struct{}
	writes  []chan struct{} // AppendWritten's waiters
	closed  bool
	err     error // the first write, sync or encoding error
	wake    chan struct{}
	done    chan struct{}

	// The writer goroutine's own state.
	lastWrite time.Time
	hasher    hash.Hash // SHA-256, reused for every line's chain value
	sum       [sha256.Size]byte
	prev      []byte // the chain value of the last line written (hex)
	size      int64  // bytes of whole lines in the file
	lastSync  time.Time
	dirty     bool // written since the last fsync
	buf       []byte

	stats Stats
}

// Stats counts what a writer did (BENCHMARKS.md: fsyncs per run, bytes per task).
type Stats struct {
	Records, Bytes, Writes, Syncs int64
}

// createWriter opens a new journal at path (0600; it must not exist).
func createWriter(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return startWriter(path, f, nil, 0), nil
}

// appendWriter opens an existing journal to go on after its last whole line (size bytes, whose
// chain value is prev): a torn line after it is cut off first.
func appendWriter(path string, size int64, prev []byte) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("cutting its torn last line: %w", err)
	}
	if _, err := f.Seek(size, 0); err != nil {
		f.Close()
		return nil, err
	}
	return startWriter(path, f, prev, size), nil
}

func startWriter(path string, f *os.File, prev []byte, size int64) *Writer {
	w := &Writer{path: path, f: f, prev: prev, size: size, wake: make(chan struct{}, 1), done: make(chan struct{}), lastSync: time.Now(),
		hasher: sha256.New()}
	go w.loop()
	return w
}

// Path is the journal's file.
func (w *Writer) Path() string { return w.path }

// Append queues one record body (a JSON object) to be written after those before it.
func (w *Writer) Append(body []byte) {
	w.mu.Lock()
	if !w.closed {
		w.pending = append(w.pending, body)
	}
	w.mu.Unlock()
	w.signal()
}

// AppendWritten appends like Append and returns once the record is written to the file (not
// necessarily synced): a process killed after it returns keeps the record. An agent's steps go
// this way, so that every step before a model request is on file when the request is sent.
func (w *Writer) AppendWritten(body []byte) {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, body)
	w.writes = append(w.writes, ch)
	w.mu.Unlock()
	w.signal()
	<-ch
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Flush returns once every record appended before it is written and synced to disk, with the
// writer's first error.
func (w *Writer) Flush() error {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.Err()
	}
	w.flushes = append(w.flushes, ch)
	w.mu.Unlock()
	w.signal()
	<-ch
	return w.Err()
}

// Close flushes, stops the writer and closes the file; its error names the file.
func (w *Writer) Close() error {
	err := w.Flush()
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if already {
		return err
	}
	w.signal()
	<-w.done
	if cerr := w.f.Close(); err == nil && cerr != nil {
		w.fail(cerr)
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("the journal %s is incomplete: %w", w.path, err)
	}
	return nil
}

// Err is the writer's first error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stats returns the counts so far (exact once Flush or Close returned).
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// loop is the writer's goroutine: write what is pending, sync when due, answer flushes.
func (w *Writer) loop() {
	defer close(w.done)
	var timer, linger *time.Timer
	var due, later <-chan time.Time
	for {
		select {
		case <-w.wake:
		case <-due:
			due = nil
		case <-later:
			later = nil
		}
		w.mu.Lock()
		if wait := WriteInterval - time.Since(w.lastWrite); wait > 0 && len(w.flushes) == 0 && len(w.writes) == 0 && !w.closed {
			w.mu.Unlock() // too soon after the last write, and nobody waits: gather more
			if later == nil {
				if linger == nil {
					linger = time.NewTimer(wait)
				} else {
					linger.Reset(wait)
				}
				later = linger.C
			}
			continue
		}
		batch, flushes, writes, closed := w.pending, w.flushes, w.writes, w.closed
		w.pending, w.flushes, w.writes = nil, nil, nil
		failed := w.err != nil
		w.mu.Unlock()
		if len(batch) > 0 && !failed {
			w.write(batch)
		}
		for _, ch := range writes {
			close(ch)
		}
		if w.dirty && (len(flushes) > 0 || closed || time.Since(w.lastSync) >= SyncInterval) {
			w.sync()
		}
		if w.dirty && due == nil { // sync what was written once the interval has passed
			wait := SyncInterval - time.Since(w.lastSync)
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			due = timer.C
		}
		for _, ch := range flushes {
			close(ch)
		}
		if closed {
			for _, t := range []*time.Timer{timer, linger} {
				if t != nil {
					t.Stop()
				}
			}
			return
		}
	}
}

// writeChunk bounds what one write call carries: a large batch goes out in pieces of about this
// size, so that the writer's buffer stays small and is kept from batch to batch.
const writeChunk = 256 << 10

// write writes a batch of records as chained lines, in as few calls as writeChunk allows.
func (w *Writer) write(batch [][]byte) {
	buf := w.buf[:0]
	for i, body := range batch {
		start := len(buf)
		buf = append(buf, `{"h":"`...)
		buf = append(buf, make([]byte, 64)...) // the chain value, filled in below
		buf = append(buf, `","r":`...)
		buf = append(buf, body...)
		buf = append(buf, "}\n"...)
		w.hasher.Reset()
		w.hasher.Write(w.prev)
		w.hasher.Write(body)
		hex.Encode(buf[start+6:start+70], w.hasher.Sum(w.sum[:0]))
		w.prev = append(w.prev[:0], buf[start+6:start+70]...)
		if len(buf) >= writeChunk || i == len(batch)-1 {
			if !w.put(buf) {
				return
			}
			buf = buf[:0]
		}
	}
	w.lastWrite = time.Now()
	w.mu.Lock()
	w.stats.Records += int64(len(batch))
	w.mu.Unlock()
	if cap(buf) <= 4*writeChunk {
		w.buf = buf
	} else {
		w.buf = nil
	}
}

// put writes whole lines; on a failure it cuts the file back to the lines before them, records
// the error and reports false (nothing more is written).
func (w *Writer) put(buf []byte) bool {
	n, err := w.f.Write(buf)
	if err == nil && n < len(buf) {
		err = errors.New("short write")
	}
	if err != nil {
		if n > 0 {
			if terr := w.f.Truncate(w.size); terr != nil {
				err = fmt.Errorf("%w (and cutting back its torn line failed: %v)", err, terr)
			}
		}
		w.fail(err)
		return false
	}
	w.size += int64(n)
	w.dirty = true
	w.mu.Lock()
	w.stats.Bytes += int64(n)
	w.stats.Writes++
	w.mu.Unlock()
	return true
}

func (w *Writer) sync() {
	if err := w.f.Sync(); err != nil {
		w.fail(fmt.Errorf("syncing it to disk: %w", err))
	}
	w.dirty = false
	w.lastSync = time.Now()
	w.mu.Lock()
	w.stats.Syncs++
	w.mu.Unlock()
}

// chain is a line's chain value: SHA-256 over the previous line's (its 64 hex characters, none
// for the first line) and the line's record bytes.
func chain(prev, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(prev)
	h.Write(body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
