//go:build unix

package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/nikahq/nika/workflow"
)

func TestProcessBound(t *testing.T) {
	tests := []struct {
		name   string
		nofile uint64
		cpus   int
		want   int
	}{
		// The descriptor term: (nofile - min(nofile/4, 256)) / 11.
		{"1024 descriptors, 2 CPUs", 1024, 2, 64},   // CPU term 64 < (1024-256)/11 = 69
		{"1024 descriptors, 16 CPUs", 1024, 16, 69}, // (1024-256)/11
		{"4096 descriptors, 2 CPUs", 4096, 2, 64},
		{"4096 descriptors, 64 CPUs", 4096, 64, 349}, // (4096-256)/11
		{"256 descriptors", 256, 8, 17},              // (256-64)/11
		{"64 descriptors", 64, 8, 4},                 // (64-16)/11
		{"16 descriptors", 16, 8, 1},                 // (16-4)/11
		{"fewer descriptors than one child needs", 8, 8, 1},
		{"one descriptor", 1, 8, 1},
		// The CPU term: 32 per CPU.
		{"Go's raised limit, 2 CPUs", 1<<20 - 1, 2, 64},
		{"Go's raised limit, 1 CPU", 1<<20 - 1, 1, 32},
		{"Go's raised limit, 128 CPUs", 1<<20 - 1, 128, 4096},
		{"no CPU count", 1 << 20, 0, 32},
		{"RLIM_INFINITY", math.MaxUint64, 4, 128},
		{"limit unknown", 0, 4, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProcessBound(tt.nofile, tt.cpus); got != tt.want {
				t.Errorf("ProcessBound(%d, %d) = %d, want %d", tt.nofile, tt.cpus, got, tt.want)
			}
		})
	}
	// Whatever the limit, the children at the bound leave the reserve free (one child is always
	// allowed, even below it).
	for nofile := uint64(1); nofile <= 5000; nofile++ {
		for _, cpus := range []int{1, 2, 64, 1024} {
			n := ProcessBound(nofile, cpus)
			if reserve := min(nofile/4, MaxReserveFDs); n > 1 && uint64(n)*FDsPerProcess > nofile-reserve {
				t.Fatalf("ProcessBound(%d, %d) = %d: %d descriptors, more than the %d left beside the reserve",
					nofile, cpus, n, n*FDsPerProcess, nofile-reserve)
			}
			if n < 1 || n > ProcessesPerCPU*cpus {
				t.Fatalf("ProcessBound(%d, %d) = %d", nofile, cpus, n)
			}
		}
	}
}

func TestDefaultMaxProcesses(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := ProcessBound(uint64(lim.Cur), runtime.GOMAXPROCS(0))
	if got := DefaultMaxProcesses(); got != want {
		t.Errorf("DefaultMaxProcesses() = %d, want %d (soft limit %d, GOMAXPROCS %d)", got, want, lim.Cur, runtime.GOMAXPROCS(0))
	}
	for _, tt := range []struct{ set, want int }{{3, 3}, {1, 1}, {0, want}, {-1, want}} {
		v := &Verb{MaxProcesses: tt.set}
		if got := v.Processes(); got != tt.want {
			t.Errorf("MaxProcesses %d: Processes() = %d, want %d", tt.set, got, tt.want)
		}
	}
}

// rendezvous runs exec children that report on the fifo started when they run, then block until
// the test writes to their own fifo.
type rendezvous struct {
	t       *testing.T
	dir     string
	v       *Verb
	started chan string // the ids the children wrote, in order
	fifo    *os.File
	// stop ends every job still running when the test ends, failed or not, so that no child is
	// left blocked on its fifo.
	stop context.Context
	wg   sync.WaitGroup
}

func newRendezvous(t *testing.T, v *Verb) *rendezvous {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read-write, so that the open does not wait for a writer and the fifo never reads EOF.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancel(context.Background())
	r := &rendezvous{t: t, dir: dir, v: v, started: make(chan string, 16), fifo: f, stop: stop}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			select {
			case r.started <- sc.Text():
			default: // nobody reads any more
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		r.wg.Wait()
		f.Close()
		<-done
	})
	return r
}

// runJob runs j in the background under ctx and r.stop.
func (r *rendezvous) runJob(ctx context.Context, j workflow.Job) <-chan workflow.Outcome {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(r.stop, func() { cancel(errors.New("the test ended")) })
	out := make(chan workflow.Outcome, 1)
	r.wg.Go(func() {
		defer stop()
		out <- r.v.Run(ctx, j)
	})
	return out
}

// run starts job id in the background. Its child writes id to the started fifo, waits for a line
// on its release fifo and prints "done id". Its live notes go to notes.
func (r *rendezvous) run(ctx context.Context, id string, notes chan<- workflow.LiveNote) <-chan workflow.Outcome {
	r.t.Helper()
	release := filepath.Join(r.dir, "release-"+id)
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		r.t.Fatal(err)
	}
	j := job(r.dir, map[string]any{
		"command": `echo "$ID" > "$STARTED"; read x < "$RELEASE"; echo "done $ID"`,
		"env":     map[string]any{"ID": id, "STARTED": r.fifo.Name(), "RELEASE": release},
	}, nil)
	if notes != nil {
		j.Live = func(n workflow.LiveNote) { notes <- n }
	}
	return r.runJob(ctx, j)
}

// release lets the child of job id end (opening the fifo waits for the child to read it).
func (r *rendezvous) release(id string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "release-"+id), []byte("go\n"), 0); err != nil {
		r.t.Fatal(err)
	}
}

// TestMaxProcessesRendezvous proves the bound: with MaxProcesses 2 and two children running, a
// third job waits (it says so on the live stream) and its child starts only once one of the two
// has been released, reaped and its slot given back. Everything is ordered through fifos and
// channels; nothing sleeps.
func TestMaxProcessesRendezvous(t *testing.T) {
	r := newRendezvous(t, &Verb{MaxProcesses: 2, Env: []string{"PATH=" + os.Getenv("PATH")}})
	ctx := context.Background()
	outs := map[string]<-chan workflow.Outcome{}
	for _, id := range []string{"a", "b"} {
		notes := make(chan workflow.LiveNote, 1)
		outs[id] = r.run(ctx, id, notes)
		if got := <-r.started; got != id {
			t.Fatalf("started %q, want %q", got, id)
		}
		if len(notes) != 0 {
			t.Fatalf("job %s was queued below the bound: %+v", id, <-notes)
		}
	}

	// Two run: the third must queue, and must not start.
	notes := make(chan workflow.LiveNote, 1)
	outs["c"] = r.run(ctx, "c", notes)
	select {
	case n := <-notes:
		if n.Kind != LiveQueued || n.Size != 2 {
			t.Fatalf("live note %+v, want %s with size 2", n, LiveQueued)
		}
	case id := <-r.started:
		t.Fatalf("job %s started while 2 processes ran under MaxProcesses 2", id)
	case out := <-outs["c"]:
		t.Fatalf("job c ended before a slot was free: %+v", out)
	}

	// A job cancelled while it waits ends NIKA-CANCEL-001 with the cause, and starts nothing.
	cctx, cancel := context.WithCancelCause(ctx)
	qnotes := make(chan workflow.LiveNote, 1)
	j := job(r.dir, map[string]any{"command": "touch ran"}, nil)
	j.Live = func(n workflow.LiveNote) { qnotes <- n }
	cancelled := r.runJob(cctx, j)
	select {
	case <-qnotes: // it waits, behind c
	case out := <-cancelled:
		t.Fatalf("the job ran while the slots were taken: %+v", out)
	}
	cause := errors.New("user pressed ^C")
	cancel(cause)
	if out := <-cancelled; out.Err == nil || out.Err.Code != "NIKA-CANCEL-001" || !errors.Is(out.Err, cause) || !errors.Is(out.Err, context.Canceled) {
		t.Fatalf("cancelled while queued: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job cancelled while queued ran its command (stat: %v)", err)
	}

	// Releasing a frees its slot for c (and only then can c start).
	r.release("a")
	if out := <-outs["a"]; out.Err != nil || out.Output != "done a" {
		t.Fatalf("job a: %+v", out)
	}
	if got := <-r.started; got != "c" {
		t.Fatalf("started %q, want c", got)
	}
	for _, id := range []string{"b", "c"} {
		r.release(id)
		if out := <-outs[id]; out.Err != nil || out.Output != "done "+id {
			t.Fatalf("job %s: %+v", id, out)
		}
	}
	if got := r.v.procs.TryAcquire(2); !got {
		t.Error("the slots were not all given back")
	}
}

// TestMaxProcessesDeadline: a job whose deadline passes while it waits for a slot ends like one
// whose process was running: NIKA-CANCEL-001, wrapping the deadline.
func TestMaxProcessesDeadline(t *testing.T) {
	r := newRendezvous(t, &Verb{MaxProcesses: 1, Env: []string{"PATH=" + os.Getenv("PATH")}})
	out := r.run(context.Background(), "a", nil)
	<-r.started
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	notes := make(chan workflow.LiveNote, 1)
	j := job(r.dir, map[string]any{"command": "true"}, nil)
	j.Live = func(n workflow.LiveNote) { notes <- n }
	queued := r.runJob(ctx, j)
	select {
	case <-notes:
	case o := <-queued:
		t.Fatalf("the job ran while another held the only slot: %+v", o)
	}
	cancel(context.DeadlineExceeded) // what the planner's timeout does, without the clock
	if o := <-queued; o.Err == nil || o.Err.Code != "NIKA-CANCEL-001" || !errors.Is(o.Err, context.DeadlineExceeded) {
		t.Fatalf("outcome %+v", o)
	}
	r.release("a")
	if o := <-out; o.Err != nil {
		t.Fatalf("job a: %+v", o)
	}
}

// BenchmarkFanOut runs n `true` children at once through one Verb, with the default bound and
// with none (a bound as wide as the fan-out). Each child holds its pipes while it runs, so without
// a bound a wide fan-out exhausts the descriptor limit: failed/op counts the jobs lost to that
// (NIKA-EXEC-002), which the default bound keeps at 0. Run it under the limit to study, e.g.
//
//	sh -c 'ulimit -n 1024; go test -run XXX -bench FanOut -benchtime 3x ./verbs/exec'
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, bound := range []struct {
			name string
			max  int
		}{{"default", 0}, {"unbounded", n}} {
			b.Run(fmt.Sprintf("tasks=%d/bound=%s", n, bound.name), func(b *testing.B) {
				v := &Verb{MaxProcesses: bound.max, Env: []string{"PATH=" + os.Getenv("PATH")}}
				dir := b.TempDir()
				fields := map[string]any{"command": []any{"true"}}
				failed := 0
				for b.Loop() {
					var wg sync.WaitGroup
					var mu sync.Mutex
					for range n {
						wg.Go(func() {
							out := v.Run(context.Background(), job(dir, fields, nil))
							if out.Err != nil {
								mu.Lock()
								failed++
								mu.Unlock()
							}
						})
					}
					wg.Wait()
				}
				b.ReportMetric(float64(v.Processes()), "procs")
				b.ReportMetric(float64(failed)/float64(b.N), "failed/op")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
			})
		}
	}
}
