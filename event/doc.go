// Package event carries a run's two streams: the canonical stream (Event, its canonical JSON line, sinks) is the
// record; the live stream (Live) is for watching, in real time. They are never mixed.
//
// # The canonical line
//
// Event.AppendJSON writes an event as one line of canonical JSON (D17): keys sorted, compact, no HTML
// escaping. The NDJSON sink (and File, the trace, which is one) writes one such line per event, each
// followed by "\n".
//
// # The chain
//
// Every line an NDJSON sink writes carries one more envelope key, "chain", whose value links the line to
// the one before it, so that a changed, removed, inserted or reordered line shows (VerifyChain, and
// `nika trace verify`). The value of line i is
//
//	chain(i) = lowercase-hex( SHA-256( chain(i-1) || line(i) without its chain member ) )
//
// where chain(i-1) is the previous line's value as its 64 ASCII hex characters, or nothing (zero bytes) for
// the first line, and "line(i) without its chain member" is the canonical line exactly as AppendJSON writes
// it, without the newline. Keys stay sorted, so the chain member sits at a known place: right after the
// "attempt" member when there is one (`{"attempt":2,"chain":"…","fields":…`), else first
// (`{"chain":"…","fields":…`). A verifier therefore:
//
//  1. takes a line without its "\n" (a last line without one is torn);
//  2. skips `{` and, if the line starts with `{"attempt":`, everything up to and including the next `,`;
//  3. expects there `"chain":"`, 64 lowercase hex digits and `",` (75 bytes), and removes exactly them;
//  4. computes SHA-256 over the previous value's 64 hex characters (none on line 1) followed by the
//     remaining bytes, and compares its lowercase hex with the 64 digits it removed.
//
// A sink chains from the first line it writes: one sink, one chain, so a trace file starts a chain and so
// does each other NDJSON stream (a server's per-run event log). Memory.Lines returns the same chained lines.
// The chain hashes ts, so it differs between two runs of the same workflow: Deterministic drops it with ts.
// It is an integrity check, not a signature: whoever can rewrite the whole file can recompute every value;
// the last line's value stands for the whole trace and can be kept elsewhere to detect that too. Lines cut
// off at the end on a line boundary leave a shorter intact chain.
//
// Readers of the canonical stream ignore kinds and keys they do not know, "chain" included.
package event
