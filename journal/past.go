package journal

import (
	"encoding/hex"
	"encoding/json"
)

// past is what earlier processes of a run journaled, as a resumed run looks it up.
type past struct {
	success map[key]*Record           // a journaled success per job (any attempt, any process)
	paused  map[key]*Record           // the jobs that paused on a question and were not answered since
	steps   map[key][]json.RawMessage // the steps of the latest unfinished attempt per job
}

// attemptID is one attempt of one process: steps group by it.
type attemptID struct {
	gen                int // the process: 0 for the first, +1 at each resume record
	task               string
	iteration, finally int
	attempt            int
}

func index(l *Log) *past {
	p := &past{success: map[key]*Record{}, paused: map[key]*Record{}, steps: map[key][]json.RawMessage{}}
	type group struct {
		k        key
		steps    []json.RawMessage
		finished bool
	}
	var groups []*group
	byID := map[attemptID]*group{}
	gen := 0
	for i := range l.Records {
		rec := &l.Records[i]
		switch rec.Kind {
		case KindResume:
			gen++
		case KindStep, KindJob:
			k := rec.key()
			id := attemptID{gen: gen, task: rec.Task, iteration: k.iteration, finally: k.finally, attempt: rec.Attempt}
			g := byID[id]
			if g == nil {
				g = &group{k: k}
				byID[id] = g
				groups = append(groups, g)
			}
			if rec.Kind == KindStep {
				if rec.N == len(g.steps) { // a step out of order is not replayed (nor any after it)
					g.steps = append(g.steps, rec.Data)
				}
				continue
			}
			g.finished = true
			switch rec.Status {
			case StatusSuccess:
				p.success[k] = rec
				delete(p.paused, k)
			case StatusPaused:
				p.paused[k] = rec
			default:
				delete(p.paused, k)
			}
		}
	}
	for _, g := range groups { // in journal order: the latest unfinished attempt wins
		if !g.finished && len(g.steps) > 0 {
			p.steps[g.k] = g.steps
		}
	}
	return p
}

func (r *Record) key() key {
	k := key{task: r.Task, iteration: -1, finally: -1, def: r.Def}
	hex.Decode(k.in[:], []byte(r.In)) // a record with a bad hash matches no job
	if r.Iteration != nil {
		k.iteration = *r.Iteration
	}
	if r.Finally != nil {
		k.finally = *r.Finally
	}
	return k
}
